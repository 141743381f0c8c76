# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-4b1d9258-decode-llama3-70b-tp8-f1e93f49-paged-decode-sm90-tma.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-4b1d9258-decode-llama3-70b-tp8-f1e93f49-paged-decode-sm90-tma.svg'
set title 'decode-llama3-70b-tp8 / paged_decode.sm90_tma'."\n".'on NVIDIA H100 80GB HBM3 (4b1d9258)'
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
0 0 71.888
1 0 85.2
2 0 68.432
0 1 74.464
1 1 82.448
2 1 69.104
0 2 79.584
1 2 82.112
2 2 75.824
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
