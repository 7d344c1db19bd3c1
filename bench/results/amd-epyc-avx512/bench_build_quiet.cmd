build/bench/bench_chash --with_204m --benchmark_filter='^build/(chash|chash_1thread)/(20.5M|204.8M)/' --benchmark_repetitions=3 --benchmark_out=bench/results/x86_64/bench_build_quiet.json --benchmark_out_format=json
# started 2026-11-30T21:44:34Z, load 0.75 1.09 1.45
