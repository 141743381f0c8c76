# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-prefill-dense-d128-4x4096-causal-7a0e7166-flash-fwd-sm80-mma.svg
reset
set terminal svg size 540,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-prefill-dense-d128-4x4096-causal-7a0e7166-flash-fwd-sm80-mma.svg'
set title 'prefill-dense-d128-4x4096-causal / flash_fwd.sm80_mma'."\n".'on NVIDIA H200 (50e4d5f7)'
set xlabel 'tile_m'
set ylabel 'stages'
set cblabel 'best median (us) over the other axes'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026')
set xrange [-0.5:3.5]
set yrange [-0.5:2.5]
set xtics ('32' 0, '64' 1, '128' 2, '256' 3)
set ytics ('2' 0, '3' 1, '4' 2)
unset key
set style fill solid 1.0 noborder
$cells << EOD
0 0 1499.28
1 0 921.04
2 0 956.336
3 0 1003.09
0 1 1470.27
1 1 1068.06
2 1 957.84
3 1 1000.98
0 2 1650.61
1 2 1072.85
2 2 952.688
3 2 999.248
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
