# build/bench/bench_chash --with_204m --benchmark_filter='^build/(chash|chash_1thread)/204.8M/' --benchmark_repetitions=3 --benchmark_out=bench/results/amd-epyc-avx512/ab-2026-12-02-2096mhz/build/bench_chash_build.json --benchmark_out_format=json
# started 2026-12-02T16:18:33Z, load 3.06 2.40 2.13, commit 9500baf
# ended 2026-12-02T16:21:11Z, load 1.28 1.88 1.97
