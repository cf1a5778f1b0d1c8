// sdm-jit-helper: the program libsdm starts to run a link it cannot fully check in a process of
// its own (jit_isolation.hpp). It speaks only to its parent, through descriptors 3 and 4; run by
// hand it finds no request and exits with status 2.
#include "jit_isolation.hpp"

int main() { return sdm::runtime::jit_helper_main(); }
