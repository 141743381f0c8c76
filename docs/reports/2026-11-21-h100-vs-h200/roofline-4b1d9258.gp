# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes roofline-4b1d9258.svg
reset
set terminal svg size 820,560 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'roofline-4b1d9258.svg'
set title "Roofline of NVIDIA H100 80GB HBM3 (4b1d9258)"
set key right bottom box opaque
set logscale xy 10
set xlabel 'arithmetic intensity (FLOP/byte)'
set ylabel 'achieved TFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set samples 400
set xrange [1.33195:3072.75]
set yrange [3.45508:2186.15]
$family0 << EOD
512 301.549
512 478.735
1024.25 298.812
1024.25 547.734
EOD
$family1 << EOD
7.98049 15.6945
7.98049 10.3652
7.98049 15.1627
3.99585 11.5728
3.99585 10.9467
3.99585 11.0777
EOD
$family2 << EOD
1024.19 141.503
1024.19 436.024
EOD
bandwidth = 3062.79  # GB/s, calibrated read bandwidth
tensor = 728.717  # TFLOP/s, calibrated bf16 tensor rate
plot bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title 'read bandwidth 3063 GB/s', \
     tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title 'bf16 tensor 729 TFLOP/s', \
     (bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc rgb '#222222' title 'roofline', \
     $family0 using 1:2 with points pt 5 ps 1.3 lc rgb '#d69e2e' title 'flash_fwd', \
     $family1 using 1:2 with points pt 7 ps 1.3 lc rgb '#38a169' title 'paged_decode', \
     $family2 using 1:2 with points pt 9 ps 1.3 lc rgb '#805ad5' title 'prefix_prefill'
