build/bench/bench_chash --with_204m --benchmark_repetitions=3 --benchmark_min_time=0.3 --benchmark_filter='^(baseline/batch1024|floor)/204.8M$|^chash/batch1024/204.8M/AVX3$' --benchmark_out=bench/results/amd-epyc-avx512/batch_204m_repeat.json --benchmark_out_format=json
# started 2026-12-02T07:51:37Z, load 0.24 0.67 0.75, commit e486cab
# ended 2026-12-02T07:52:35Z, load 0.70 0.73 0.77
