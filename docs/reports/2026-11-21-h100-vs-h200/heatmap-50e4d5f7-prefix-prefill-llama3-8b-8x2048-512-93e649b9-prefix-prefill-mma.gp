# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-50e4d5f7-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-mma.svg
reset
set terminal svg size 540,380 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-50e4d5f7-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-mma.svg'
set title 'prefix-prefill-llama3-8b-8x2048-512 / prefix_prefill.mma'."\n".'on NVIDIA H200 (50e4d5f7)'
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
0 0 2931.58
1 0 1622.11
2 0 1276.67
3 0 1396.83
0 1 4390.88
1 1 1987.33
2 1 1412.29
3 1 1207.1
0 2 6740.42
1 2 3198.66
2 2 1406.21
3 2 1107.62
0 3 20023.2
1 3 6581.73
2 3 2436.67
3 3 1236.16
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
