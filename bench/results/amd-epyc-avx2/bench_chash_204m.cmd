build/bench/bench_chash --with_204m --benchmark_repetitions=1 --benchmark_min_time=0.3 --benchmark_filter='^(lower_bound/(single|dependent)|pingora/key|nginx/key|floor|floor_dependent|baseline/batch1024|baseline/key_batch1024)/204.8M$|^chash/(single|dependent|batch1024|key|key_batch1024)/204.8M/AVX2$|^proxy/.*/204.8M' --benchmark_out=bench/results/amd-epyc-avx2/bench_chash_204m.json --benchmark_out_format=json
# started 2026-12-02T01:41:33Z, load 1.13 1.57 1.59
# ended 2026-12-02T01:43:01Z, load 1.13 1.45 1.54
