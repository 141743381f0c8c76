# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-decode-llama3-8b-64x4096-46563be1-paged-decode-tensorcore.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-decode-llama3-8b-64x4096-46563be1-paged-decode-tensorcore.svg'
set title 'decode-llama3-8b-64x4096 / paged_decode.tensorcore'."\n".'on NVIDIA H200 (50e4d5f7)'
set xlabel 'num_splits'
set ylabel 'stages'
set cblabel 'best median (us) over the other axes'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026')
set xrange [-0.5:2.5]
set yrange [-0.5:2.5]
set xtics ('0' 0, '1' 1, '8' 2)
set ytics ('2' 0, '3' 1, '4' 2)
unset key
set style fill solid 1.0 noborder
$cells << EOD
0 0 287.28
1 0 279.936
2 0 295.856
0 1 292.32
1 1 279.056
2 1 296.528
0 2 338.352
1 2 384.176
2 2 331.728
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
