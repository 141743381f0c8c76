# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-prefill-dense-d128-16x1024-dddad9f2-flash-fwd-sm80-mma.svg
reset
set terminal svg size 540,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-prefill-dense-d128-16x1024-dddad9f2-flash-fwd-sm80-mma.svg'
set title 'prefill-dense-d128-16x1024 / flash_fwd.sm80_mma'."\n".'on NVIDIA H200 (50e4d5f7)'
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
0 0 757.968
1 0 489.888
2 0 463.696
3 0 488.56
0 1 746.064
1 1 549.008
2 1 462.8
3 1 481.248
0 2 896.192
1 2 565.568
2 2 462.592
3 2 479.008
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
