// A C++ program of the shapes whose names are long: a class template in an anonymous
// namespace whose two instantiations (Store<std::uint64_t>, Store<std::uint32_t>) keep
// 16 MiB and 8 MiB through std::vector (one function for a person: (anon)::Store<…>::fill,
// 24 MiB), and a lambda in build_index that keeps 12 blocks of 1 MiB (build_index's, 12 MiB).
// Everything is held until the program exits. Built with g++ against Debian's libstdc++
// (tests/runtimes/build.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

template <typename T>
class Store {
 public:
  // Keeps `bytes` bytes of T, each written.
  __attribute__((noinline)) void fill(std::size_t bytes) {
    items_.resize(bytes / sizeof(T));
    for (std::size_t i = 0; i < items_.size(); ++i) {
      items_[i] = static_cast<T>(i * 7 + 1);
    }
  }

  std::size_t size() const { return items_.size(); }

 private:
  std::vector<T> items_;
};

}  // namespace

__attribute__((noinline)) std::vector<std::unique_ptr<char[]>> build_index(std::size_t blocks) {
  std::vector<std::unique_ptr<char[]>> index;
  auto make_block = [](std::size_t bytes) __attribute__((noinline)) {
    std::unique_ptr<char[]> block(new char[bytes]);
    std::memset(block.get(), 0x5a, bytes);
    return block;
  };
  for (std::size_t i = 0; i < blocks; ++i) {
    index.push_back(make_block(1 << 20));
  }
  return index;
}

int main() {
  static Store<std::uint64_t> wide;
  static Store<std::uint32_t> narrow;
  wide.fill(16 << 20);
  narrow.fill(8 << 20);
  static std::vector<std::unique_ptr<char[]>> index = build_index(12);
  std::printf("%zu %zu %zu\n", wide.size(), narrow.size(), index.size());
  // Held to the end: exit without freeing.
  std::fflush(stdout);
  std::_Exit(0);
}
