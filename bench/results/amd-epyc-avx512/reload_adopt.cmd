build/bench/bench_snapshot --benchmark_filter='^(reload/|load/(sealed_verified|sealed_signed)/)' --benchmark_out=bench/results/amd-epyc-avx512/reload_adopt.json --benchmark_out_format=json
