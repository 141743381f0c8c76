# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes roofline-4b1d9258.svg
reset
set terminal svg size 995,560 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'roofline-4b1d9258.svg'
set title 'Roofline of NVIDIA H100 80GB HBM3 (4b1d9258)'
set key outside right top vertical Left reverse noopaque samplen 2
set logscale xy 10
set xlabel 'arithmetic intensity (FLOP/byte)'
set ylabel 'achieved TFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set samples 400
set xrange [1.33195:3072.75]
set yrange [3.45508:2186.15]
$variant0 << EOD
512 301.549
1024.25 298.812
EOD
$variant1 << EOD
512 478.735
1024.25 547.734
EOD
$variant2 << EOD
7.98049 15.6945
3.99585 11.5728
EOD
$variant3 << EOD
7.98049 10.3652
3.99585 10.9467
EOD
$variant4 << EOD
7.98049 15.1627
3.99585 11.0777
EOD
$variant5 << EOD
1024.19 141.503
EOD
$variant6 << EOD
1024.19 436.024
EOD
bandwidth = 3062.79  # GB/s, calibrated read bandwidth
tensor = 728.717  # TFLOP/s, calibrated bf16 tensor rate
plot bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title 'read bandwidth 3063 GB/s', \
     tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title 'bf16 tensor 729 TFLOP/s', \
     (bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc rgb '#222222' title 'roofline', \
     $variant0 using 1:2 with points pt 5 ps 1.3 lc rgb '#d69e2e' title 'flash_fwd.sm80_mma', \
     $variant1 using 1:2 with points pt 7 ps 1.3 lc rgb '#d69e2e' title 'flash_fwd.sm90_wgmma', \
     $variant2 using 1:2 with points pt 5 ps 1.3 lc rgb '#38a169' title 'paged_decode.sm90_tma', \
     $variant3 using 1:2 with points pt 7 ps 1.3 lc rgb '#38a169' title 'paged_decode.splitkv', \
     $variant4 using 1:2 with points pt 9 ps 1.3 lc rgb '#38a169' title 'paged_decode.tensorcore', \
     $variant5 using 1:2 with points pt 5 ps 1.3 lc rgb '#805ad5' title 'prefix_prefill.mma', \
     $variant6 using 1:2 with points pt 7 ps 1.3 lc rgb '#805ad5' title 'prefix_prefill.sm90_wgmma'
