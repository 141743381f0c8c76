# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes roofline-50e4d5f7.svg
reset
set terminal svg size 995,560 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'roofline-50e4d5f7.svg'
set title 'Roofline of NVIDIA H200 (50e4d5f7)'
set key outside right top vertical Left reverse noopaque samplen 2
set logscale xy 10
set xlabel 'arithmetic intensity (FLOP/byte)'
set ylabel 'achieved TFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set samples 400
set xrange [1.33195:3072.75]
set yrange [3.45935:2139.46]
$variant0 << EOD
512 297.106
1024.25 298.516
EOD
$variant1 << EOD
512 477.272
1024.25 545.076
EOD
$variant2 << EOD
7.98049 20.2306
3.99585 15.9357
EOD
$variant3 << EOD
7.98049 10.3781
3.99585 11.3584
EOD
$variant4 << EOD
7.98049 19.3055
3.99585 15.3948
EOD
$variant5 << EOD
1024.19 139.626
EOD
$variant6 << EOD
1024.19 435.748
EOD
bandwidth = 4333.52  # GB/s, calibrated read bandwidth
tensor = 713.154  # TFLOP/s, calibrated bf16 tensor rate
plot bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title 'read bandwidth 4334 GB/s', \
     tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title 'bf16 tensor 713 TFLOP/s', \
     (bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc rgb '#222222' title 'roofline', \
     $variant0 using 1:2 with points pt 5 ps 1.3 lc rgb '#d69e2e' title 'flash_fwd.sm80_mma', \
     $variant1 using 1:2 with points pt 7 ps 1.3 lc rgb '#d69e2e' title 'flash_fwd.sm90_wgmma', \
     $variant2 using 1:2 with points pt 5 ps 1.3 lc rgb '#38a169' title 'paged_decode.sm90_tma', \
     $variant3 using 1:2 with points pt 7 ps 1.3 lc rgb '#38a169' title 'paged_decode.splitkv', \
     $variant4 using 1:2 with points pt 9 ps 1.3 lc rgb '#38a169' title 'paged_decode.tensorcore', \
     $variant5 using 1:2 with points pt 5 ps 1.3 lc rgb '#805ad5' title 'prefix_prefill.mma', \
     $variant6 using 1:2 with points pt 7 ps 1.3 lc rgb '#805ad5' title 'prefix_prefill.sm90_wgmma'
