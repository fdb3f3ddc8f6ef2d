// tests/duplicate_id/main.cpp — never reached: the registry refuses the second
// registration of gemm/cpu/duplicate_probe during static initialisation.
#include <cstdio>

int main() {
  std::puts("convlab_duplicate_id: main() reached, the duplicate id was not refused");
  return 0;
}
