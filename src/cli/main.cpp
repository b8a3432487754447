// parallm command-line entry: dispatches to one file per subcommand.
#include <cstdio>
int main() { std::puts("parallm"); return 0; }
