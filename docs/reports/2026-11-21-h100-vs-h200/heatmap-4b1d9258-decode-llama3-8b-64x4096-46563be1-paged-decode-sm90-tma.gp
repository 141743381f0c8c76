# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes heatmap-4b1d9258-decode-llama3-8b-64x4096-46563be1-paged-decode-sm90-tma.svg
reset
set terminal svg size 520,360 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'heatmap-4b1d9258-decode-llama3-8b-64x4096-46563be1-paged-decode-sm90-tma.svg'
set title 'decode-llama3-8b-64x4096 / paged_decode.sm90_tma'."\n".'on NVIDIA H100 80GB HBM3 (4b1d9258)'
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
0 0 384.16
1 0 371.216
2 0 387.04
0 1 383.792
1 1 373.632
2 1 387.872
0 2 394.96
1 2 375.872
2 2 392.72
EOD
plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \
     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'
