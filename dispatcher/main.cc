#include <cstdio>

int main() {
  std::puts("relay-egress: under construction");
  return 0;
}
