# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-4b1d9258-prefill-dense-d128-4x4096-causal-7a0e7166-flash-fwd-sm80-mma.svg
reset
set terminal svg size 540,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-4b1d9258-prefill-dense-d128-4x4096-causal-7a0e7166-flash-fwd-sm80-mma.svg'
set title 'prefill-dense-d128-4x4096-causal / flash_fwd.sm80_mma'."\n".'on NVIDIA H100 80GB HBM3 (4b1d9258)'
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
0 0 1714.69
1 0 920.128
2 0 952.448
3 0 1003.1
0 1 1660.83
1 1 1067.82
2 1 964.656
3 1 1002.82
0 2 1708.99
1 2 1062.82
2 2 964.944
3 2 995.52
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
