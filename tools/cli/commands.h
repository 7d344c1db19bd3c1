// The `chash` subcommands. Each takes the arguments after its name and
// returns the process exit status.
#ifndef CHASH_TOOLS_COMMANDS_H_
#define CHASH_TOOLS_COMMANDS_H_

#include <string_view>
#include <vector>

namespace chash::cli {

using Args = std::vector<std::string_view>;

int RunRoute(const Args& args);
int RunStats(const Args& args);
int RunDemo(const Args& args);
int RunDiff(const Args& args);
int RunPlan(const Args& args);
int RunBench(const Args& args);
int RunKeygen(const Args& args);
int RunBuild(const Args& args);
int RunInspect(const Args& args);
int RunVerify(const Args& args);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_COMMANDS_H_
