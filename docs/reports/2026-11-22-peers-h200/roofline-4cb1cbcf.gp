# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes roofline-4cb1cbcf.svg
reset
set terminal svg size 820,560 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'roofline-4cb1cbcf.svg'
set title 'Roofline of NVIDIA H200 (4cb1cbcf)'
set key right bottom box opaque
set logscale xy 10
set xlabel 'arithmetic intensity (FLOP/byte)'
set ylabel 'achieved TFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set samples 400
set xrange [1.33195:3187.2]
set yrange [0.106993:2156.76]
$family0 << EOD
1062.4 257.629
1062.4 395.431
1062.4 95.2051
1062.4 145.247
EOD
$family1 << EOD
1024.25 286.377
1024.25 547.159
1024.25 490.875
1024.25 317.207
1024.25 166.951
1024.25 566.085
1024.25 159.847
1024.25 301.819
1024.22 294.24
1024.22 527.349
EOD
$family2 << EOD
3.99585 15.0708
3.99585 11.2901
3.99585 15.1422
3.99585 12.7318
3.99585 0.320979
3.99585 6.31678
3.99585 13.5292
3.99585 2.57681
3.99585 9.49774
EOD
$family3 << EOD
3.99585 3.6918
3.99585 15.0775
1024.23 152.143
1024.23 508.329
1024.19 411.835
1024.19 315.741
1024.19 178.731
1024.19 210.776
1024.19 138.403
1024.19 255.128
1024.19 139.499
1024.19 435.415
EOD
bandwidth = 4530.71  # GB/s, calibrated read bandwidth
tensor = 718.921  # TFLOP/s, calibrated bf16 tensor rate
plot bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title 'read bandwidth 4531 GB/s', \
     tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title 'bf16 tensor 719 TFLOP/s', \
     (bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc rgb '#222222' title 'roofline', \
     $family0 using 1:2 with points pt 5 ps 1.3 lc rgb '#d69e2e' title 'blocksparse', \
     $family1 using 1:2 with points pt 7 ps 1.3 lc rgb '#38a169' title 'flash_fwd', \
     $family2 using 1:2 with points pt 9 ps 1.3 lc rgb '#805ad5' title 'paged_decode', \
     $family3 using 1:2 with points pt 11 ps 1.3 lc rgb '#dd6b20' title 'prefix_prefill'
