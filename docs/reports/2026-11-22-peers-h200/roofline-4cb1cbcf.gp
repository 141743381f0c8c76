# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes roofline-4cb1cbcf.svg
reset
set terminal svg size 995,560 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'roofline-4cb1cbcf.svg'
set title 'Roofline of NVIDIA H200 (4cb1cbcf)'
set key outside right top vertical Left reverse noopaque samplen 2
set logscale xy 10
set xlabel 'arithmetic intensity (FLOP/byte)'
set ylabel 'achieved TFLOP/s'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set samples 400
set xrange [1.33195:3187.2]
set yrange [0.106993:2156.76]
$variant0 << EOD
1062.4 257.629
EOD
$variant1 << EOD
1062.4 395.431
EOD
$variant2 << EOD
1062.4 95.2051
EOD
$variant3 << EOD
1062.4 145.247
EOD
$variant4 << EOD
1024.25 286.377
1024.22 294.24
EOD
$variant5 << EOD
1024.25 547.159
1024.22 527.349
EOD
$variant6 << EOD
1024.25 490.875
EOD
$variant7 << EOD
1024.25 317.207
EOD
$variant8 << EOD
1024.25 166.951
EOD
$variant9 << EOD
1024.25 566.085
EOD
$variant10 << EOD
1024.25 159.847
EOD
$variant11 << EOD
1024.25 301.819
EOD
$variant12 << EOD
3.99585 15.0708
EOD
$variant13 << EOD
3.99585 11.2901
EOD
$variant14 << EOD
3.99585 15.1422
EOD
$variant15 << EOD
3.99585 12.7318
EOD
$variant16 << EOD
3.99585 0.320979
EOD
$variant17 << EOD
3.99585 6.31678
EOD
$variant18 << EOD
3.99585 13.5292
EOD
$variant19 << EOD
3.99585 2.57681
EOD
$variant20 << EOD
3.99585 9.49774
EOD
$variant21 << EOD
1024.19 411.835
EOD
$variant22 << EOD
1024.19 315.741
EOD
$variant23 << EOD
1024.19 178.731
EOD
$variant24 << EOD
1024.19 210.776
EOD
$variant25 << EOD
1024.19 138.403
EOD
$variant26 << EOD
1024.19 255.128
EOD
$variant27 << EOD
3.99585 3.6918
1024.23 152.143
1024.19 139.499
EOD
$variant28 << EOD
3.99585 15.0775
1024.23 508.329
1024.19 435.415
EOD
bandwidth = 4530.71  # GB/s, calibrated read bandwidth
tensor = 718.921  # TFLOP/s, calibrated bf16 tensor rate
plot bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title 'read bandwidth 4531 GB/s', \
     tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title 'bf16 tensor 719 TFLOP/s', \
     (bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc rgb '#222222' title 'roofline', \
     $variant0 using 1:2 with points pt 5 ps 1.3 lc rgb '#d69e2e' title 'blocksparse.mma', \
     $variant1 using 1:2 with points pt 7 ps 1.3 lc rgb '#d69e2e' title 'blocksparse.sm90_wgmma', \
     $variant2 using 1:2 with points pt 9 ps 1.3 lc rgb '#d69e2e' title 'peer.torch.flex', \
     $variant3 using 1:2 with points pt 11 ps 1.3 lc rgb '#d69e2e' title 'peer.torch.flex_paged', \
     $variant4 using 1:2 with points pt 5 ps 1.3 lc rgb '#38a169' title 'flash_fwd.sm80_mma', \
     $variant5 using 1:2 with points pt 7 ps 1.3 lc rgb '#38a169' title 'flash_fwd.sm90_wgmma', \
     $variant6 using 1:2 with points pt 9 ps 1.3 lc rgb '#38a169' title 'peer.flashinfer.prefill', \
     $variant7 using 1:2 with points pt 11 ps 1.3 lc rgb '#38a169' title 'peer.torch.flex', \
     $variant8 using 1:2 with points pt 13 ps 1.3 lc rgb '#38a169' title 'peer.torch.flex_paged', \
     $variant9 using 1:2 with points pt 4 ps 1.3 lc rgb '#38a169' title 'peer.torch.sdpa_cudnn', \
     $variant10 using 1:2 with points pt 6 ps 1.3 lc rgb '#38a169' title 'peer.torch.sdpa_efficient', \
     $variant11 using 1:2 with points pt 8 ps 1.3 lc rgb '#38a169' title 'peer.torch.sdpa_flash', \
     $variant12 using 1:2 with points pt 5 ps 1.3 lc rgb '#805ad5' title 'paged_decode.sm90_tma', \
     $variant13 using 1:2 with points pt 7 ps 1.3 lc rgb '#805ad5' title 'paged_decode.splitkv', \
     $variant14 using 1:2 with points pt 9 ps 1.3 lc rgb '#805ad5' title 'paged_decode.tensorcore', \
     $variant15 using 1:2 with points pt 11 ps 1.3 lc rgb '#805ad5' title 'peer.flashinfer.decode', \
     $variant16 using 1:2 with points pt 13 ps 1.3 lc rgb '#805ad5' title 'peer.torch.flex', \
     $variant17 using 1:2 with points pt 4 ps 1.3 lc rgb '#805ad5' title 'peer.torch.flex_paged', \
     $variant18 using 1:2 with points pt 6 ps 1.3 lc rgb '#805ad5' title 'peer.torch.sdpa_cudnn', \
     $variant19 using 1:2 with points pt 8 ps 1.3 lc rgb '#805ad5' title 'peer.torch.sdpa_efficient', \
     $variant20 using 1:2 with points pt 10 ps 1.3 lc rgb '#805ad5' title 'peer.torch.sdpa_flash', \
     $variant21 using 1:2 with points pt 5 ps 1.3 lc rgb '#dd6b20' title 'peer.flashinfer.prefill', \
     $variant22 using 1:2 with points pt 7 ps 1.3 lc rgb '#dd6b20' title 'peer.torch.flex', \
     $variant23 using 1:2 with points pt 9 ps 1.3 lc rgb '#dd6b20' title 'peer.torch.flex_paged', \
     $variant24 using 1:2 with points pt 11 ps 1.3 lc rgb '#dd6b20' title 'peer.torch.sdpa_cudnn', \
     $variant25 using 1:2 with points pt 13 ps 1.3 lc rgb '#dd6b20' title 'peer.torch.sdpa_efficient', \
     $variant26 using 1:2 with points pt 4 ps 1.3 lc rgb '#dd6b20' title 'peer.torch.sdpa_flash', \
     $variant27 using 1:2 with points pt 6 ps 1.3 lc rgb '#dd6b20' title 'prefix_prefill.mma', \
     $variant28 using 1:2 with points pt 8 ps 1.3 lc rgb '#dd6b20' title 'prefix_prefill.sm90_wgmma'
