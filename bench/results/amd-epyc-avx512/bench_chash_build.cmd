build/bench/bench_chash --with_204m --benchmark_filter='^build/(chash|chash_1thread)/(20.5M|204.8M)/' --benchmark_repetitions=3 --benchmark_out=bench/results/amd-epyc-avx512/bench_chash_build.json --benchmark_out_format=json
# started 2026-12-02T07:26:03Z, load 0.91 0.65 0.30, commit e486cab
# ended 2026-12-02T07:27:56Z, load 1.22 0.85 0.41
