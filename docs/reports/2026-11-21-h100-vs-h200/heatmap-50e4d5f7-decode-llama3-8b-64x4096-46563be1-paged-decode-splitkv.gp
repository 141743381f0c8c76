# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-decode-llama3-8b-64x4096-46563be1-paged-decode-splitkv.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-decode-llama3-8b-64x4096-46563be1-paged-decode-splitkv.svg'
set title 'decode-llama3-8b-64x4096 / paged_decode.splitkv'."\n".'on NVIDIA H200 (50e4d5f7)'
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
0 0 381.648
1 0 381.936
2 0 387.312
0 1 378.224
1 1 380.336
2 1 384.016
0 2 378.384
1 2 378.448
2 2 386
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
