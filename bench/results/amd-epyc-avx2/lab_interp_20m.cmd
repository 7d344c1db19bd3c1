# The layout lab's interpolated slot table (lab/interp*) against the S+ tree
# under a prefix table (chash/*: the layout shipped until then), commit 591f3a2
# plus the lab code of bench/bench_chash.cc, 2026-12-02, this host:
build/bench/bench_chash --benchmark_filter='^(lab/interp1[78]w.*/20.5M|chash/(single|dependent|batch1024)/20.5M/AVX2|floor_dependent/20.5M)$' --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 --benchmark_out=bench/results/amd-epyc-avx2/lab_interp_20m.json --benchmark_out_format=json
# and the proxy-shaped rows (cold lookups) of the same code:
build/bench/bench_chash --benchmark_filter='^proxy/(chash_hash|line|interp16_hash|interp32_hash|pingora_key)/(16K|4M|random)/20.5M/iterations:1$' --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/amd-epyc-avx2/lab_interp_proxy_20m.json --benchmark_out_format=json
