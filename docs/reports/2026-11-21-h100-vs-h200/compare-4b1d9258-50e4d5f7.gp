# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes compare-4b1d9258-50e4d5f7.svg
reset
set terminal svg size 560,520 dynamic noenhanced font 'sans,11' background '#ffffff'
set output 'compare-4b1d9258-50e4d5f7.svg'
set title "Speed-up of B over A (95% intervals)\nA: NVIDIA H100 80GB HBM3 (4b1d9258)\nB: NVIDIA H200 (50e4d5f7)"
set ylabel 'speed-up of B over A (median A / median B)'
set xrange [-0.6:4.6]
set yrange [0:1.58643]
set xtics rotate by -30 left nomirror
set grid ytics lc rgb '#dddddd'
set boxwidth 0.6
set style fill solid 0.7 border lc rgb '#1a365d'
set key right top
set bmargin 9
$bars << EOD
0 "decode-llama3-70b-tp8" 1.28903 1.27774 1.30736
1 "decode-llama3-8b-64x4096" 1.377 1.37292 1.3795
2 "prefill-dense-d128-16x1024" 0.996944 0.994229 0.998833
3 "prefill-dense-d128-4x4096-causal" 0.995147 0.993036 0.997048
4 "prefix-prefill-llama3-8b-8x2048-512" 0.999369 0.997928 1.00063
EOD
plot $bars using 1:3:xtic(2) with boxes lc rgb '#4a90d9' title 'speed-up', \
     $bars using 1:3:4:5 with yerrorbars pt 7 ps 0.4 lw 1.5 lc rgb '#1a202c' title '95% interval', \
     1 with lines dt 2 lw 1.5 lc rgb '#444444' title 'no change'
