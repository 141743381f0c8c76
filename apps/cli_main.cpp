#include "apps/cli_main.hpp"

#include <iostream>
#include <new>

#include "apps/commands.hpp"
#include "base/errors.hpp"

namespace attn {

int run_cli(CLI::App& app, const std::vector<std::string>& args, const std::string& program,
            const Invocation& invocation) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);  // CLI11 takes the arguments in reverse order
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the parse error
    return code == 0 ? 0 : to_int(ExitCode::usage);
  } catch (const InputError& e) {
    std::cerr << program << ": invalid input: " << e.what() << "\n";
    return to_int(e.code());
  } catch (const Error& e) {
    const char* kind = e.code() == ExitCode::usage         ? "usage"
                       : e.code() == ExitCode::environment ? "environment"
                                                           : "error";
    std::cerr << program << ": " << kind << ": " << e.what() << "\n";
    return to_int(e.code());
  } catch (const std::bad_alloc& e) {
    // The machine ran out of memory (or a size no allocation can hold was asked for): what was
    // asked is not wrong, this machine cannot hold it.
    std::cerr << program << ": environment: out of host memory (" << e.what()
              << "); --max-host-memory sets the budget checked before allocating, see "
                 "docs/workload.md\n";
    return to_int(ExitCode::environment);
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return to_int(ExitCode::internal);
  }
  return invocation.exit_code;
}

}  // namespace attn
