# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-4b1d9258-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-mma.svg
reset
set terminal svg size 540,380 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-4b1d9258-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-mma.svg'
set title 'prefix-prefill-llama3-8b-8x2048-512 / prefix_prefill.mma'."\n".'on NVIDIA H100 80GB HBM3 (4b1d9258)'
set xlabel 'block_m'
set ylabel 'block_n'
set cblabel 'best median (us) over the other axes'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026')
set xrange [-0.5:3.5]
set yrange [-0.5:3.5]
set xtics ('16' 0, '32' 1, '64' 2, '128' 3)
set ytics ('16' 0, '32' 1, '64' 2, '128' 3)
unset key
set style fill solid 1.0 noborder
$cells << EOD
0 0 2907.62
1 0 1590.62
2 0 1255.65
3 0 1385.34
0 1 4323.17
1 1 1951.49
2 1 1401.6
3 1 1186
0 2 6510.02
1 2 3143.07
2 2 1394.4
3 2 1092.93
0 3 19414.7
1 3 6354.14
2 3 2396.26
3 3 1246.4
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
