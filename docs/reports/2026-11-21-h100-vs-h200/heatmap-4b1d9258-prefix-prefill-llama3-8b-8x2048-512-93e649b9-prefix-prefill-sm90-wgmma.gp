# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-4b1d9258-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-sm90-wgmma.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-4b1d9258-prefix-prefill-llama3-8b-8x2048-512-93e649b9-prefix-prefill-sm90-wgmma.svg'
set title 'prefix-prefill-llama3-8b-8x2048-512 / prefix_prefill.sm90_wgmma'."\n".'on NVIDIA H100 80GB HBM3 (4b1d9258)'
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
0 0 538.4
1 0 354.688
0 1 545.952
1 1 357.296
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
