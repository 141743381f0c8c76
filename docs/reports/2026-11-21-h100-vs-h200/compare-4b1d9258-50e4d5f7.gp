# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes compare-4b1d9258-50e4d5f7.svg
reset
set terminal svg size 965,310 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'compare-4b1d9258-50e4d5f7.svg'
set title 'Speed-up of B over A (95% intervals)'."\n".'A: NVIDIA H100 80GB HBM3 (4b1d9258)'."\n".'B: NVIDIA H200 (50e4d5f7)'
set xlabel 'speed-up of B over A (median A / median B); 1 = no change'
set xrange [0.962118:1.41042]
set yrange [4.5:-0.5]
set lmargin 37
set grid xtics lc rgb '#dddddd'
set key outside right top vertical Left reverse samplen 2
set style fill solid 0.75 border lc rgb '#1a202c'
set ytics ('decode-llama3-70b-tp8' 0, 'decode-llama3-8b-64x4096' 1, 'prefill-dense-d128-16x1024' 2, 'prefill-dense-d128-4x4096-causal' 3, 'prefix-prefill-llama3-8b-8x2048-512' 4) nomirror
$faster << EOD
0 1.28903 1.27774 1.30736
1 1.377 1.37292 1.3795
EOD
$same << EOD
4 0.999369 0.997928 1.00063
EOD
$slower << EOD
2 0.996944 0.994229 0.998833
3 0.995147 0.993036 0.997048
EOD
set arrow 1 from 1, graph 0 to 1, graph 1 nohead dt 2 lw 1.5 lc rgb '#444444' front
plot $faster using (($2 + 1) / 2):1:(1 < $2 ? 1 : $2):(1 < $2 ? $2 : 1):($1 - 0.3):($1 + 0.3) with boxxyerror fc rgb '#2f855a' title 'B faster (interval above 1)', \
     $faster using 2:1:3:4 with xerrorbars pt 7 ps 0.5 lw 1.5 lc rgb '#1a202c' notitle, \
     $same using (($2 + 1) / 2):1:(1 < $2 ? 1 : $2):(1 < $2 ? $2 : 1):($1 - 0.3):($1 + 0.3) with boxxyerror fc rgb '#a0aec0' title 'no clear change (interval holds 1)', \
     $same using 2:1:3:4 with xerrorbars pt 7 ps 0.5 lw 1.5 lc rgb '#1a202c' notitle, \
     $slower using (($2 + 1) / 2):1:(1 < $2 ? 1 : $2):(1 < $2 ? $2 : 1):($1 - 0.3):($1 + 0.3) with boxxyerror fc rgb '#c53030' title 'B slower (interval below 1)', \
     $slower using 2:1:3:4 with xerrorbars pt 7 ps 0.5 lw 1.5 lc rgb '#1a202c' notitle, \
     keyentry with lines dt 2 lw 1.5 lc rgb '#444444' title 'no change (1.0)'
