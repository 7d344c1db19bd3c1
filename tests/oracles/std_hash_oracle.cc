// Prints std::hash<std::string> (libstdc++'s _Hash_bytes, MurmurHash2-64 with seed
// 0xc70f6907 on 64-bit) of each line of a keys file: the real library answers for
// Envoy's MURMUR_HASH_2 ring hash function. Built and run by envoy_hash_oracle.py.
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: std_hash_oracle KEYS\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t start = 0;
  while (start < data.size()) {
    size_t nl = data.find('\n', start);
    if (nl == std::string::npos) nl = data.size();
    std::cout << std::hash<std::string>{}(data.substr(start, nl - start)) << '\n';
    start = nl + 1;
  }
  return 0;
}
