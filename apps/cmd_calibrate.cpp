#include "apps/commands.hpp"
namespace attn {
void add_calibrate_command(CLI::App&, Invocation&) {}
}
