# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-prefill-dense-d128-16x1024-dddad9f2-flash-fwd-sm90-wgmma.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-prefill-dense-d128-16x1024-dddad9f2-flash-fwd-sm90-wgmma.svg'
set title 'prefill-dense-d128-16x1024 / flash_fwd.sm90_wgmma'."\n".'on NVIDIA H200 (50e4d5f7)'
set xlabel 'consumers'
set ylabel 'stages'
set cblabel 'best median (us) over the other axes'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026')
set xrange [-0.5:1.5]
set yrange [-0.5:1.5]
set xtics ('1' 0, '2' 1)
set ytics ('2' 0, '3' 1)
unset key
set style fill solid 1.0 noborder
$cells << EOD
0 0 400.624
1 0 287.968
0 1 404.976
1 1 294.608
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
