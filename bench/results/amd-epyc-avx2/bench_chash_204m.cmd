build/bench/bench_chash --with_204m --benchmark_repetitions=1 --benchmark_min_time=0.3 --benchmark_filter='^(lower_bound/(single|dependent)|pingora/key|nginx/key|floor|floor_dependent|baseline/batch1024|baseline/key_batch1024)/204.8M$|^chash/(single|dependent|batch1024|key|key_batch1024)/204.8M/AVX2$|^proxy/.*/204.8M' --benchmark_out=bench/results/amd-epyc-avx2/bench_chash_204m.json --benchmark_out_format=json
# started 2026-12-01T18:22:24Z, load 0.08 0.66 1.05
# ended 2026-12-01T18:23:45Z, load 0.78 0.76 1.05
