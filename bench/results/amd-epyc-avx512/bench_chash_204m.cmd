build/bench/bench_chash --with_204m --benchmark_repetitions=1 --benchmark_min_time=0.3 --benchmark_filter='^(lower_bound/(single|dependent)|pingora/key|nginx/key|floor|floor_dependent|baseline/batch1024|baseline/key_batch1024)/204.8M$|^chash/(single|dependent|batch1024|key|key_batch1024)/204.8M/AVX3$|^proxy/.*/204.8M' --benchmark_out=bench/results/amd-epyc-avx512/bench_chash_204m.json --benchmark_out_format=json
# started 2026-12-02T07:24:38Z, load 0.88 0.53 0.22
# ended 2026-12-02T07:25:56Z, load 0.99 0.66 0.30
