#include "bootstrap/environment.hpp"

namespace tsu::bootstrap {

namespace {
constexpr EnvironmentVariable kUser[] = {
    {"TSU_BOOTSTRAP", "(by launcher)",
     "how ranks find each other: pmix insists on a PMIx launcher (an error without one); "
     "unset: tsurun's service where tsurun set unix:PATH or tcp:HOST:PORT, else PMIx where "
     "a PMIx launcher started the process (PMIX_NAMESPACE, PMIX_RANK), else a job of one"},
    {"TSU_PLACEMENT", "(exchange)",
     "the job's layout, block:K (node = rank / K) or cyclic:H (node = rank % H), so a rank "
     "fetches only its node peers' records at init; tsurun sets it with --ranks-per-node and "
     "--hosts; set it with TSU_NODE_ID under PMIx (docs/launchers.md); unset: PMIx's node "
     "ids, else every rank's record is fetched"},
    {"TSU_JOB_SECRET", "(from the launcher)",
     "the job secret as 32 hex digits, for custom launchers (every rank the same; not "
     "recommended: the environment is readable in /proc); under PMIx it overrides the secret "
     "rank 0 draws; tsurun removes it and passes the secret by TSU_JOB_SECRET_FD"},
};

constexpr EnvironmentVariable kLauncher[] = {
    {"TSU_RANK", "", "this rank's number, 0 <= rank < TSU_SIZE"},
    {"TSU_SIZE", "", "the number of ranks in the job"},
    {"TSU_BOOTSTRAP", "", "unix:PATH or tcp:HOST:PORT: the launcher's bootstrap service"},
    {"TSU_JOBID", "", "the job's id, unique per run (tsurun: its pid and start time)"},
    {"TSU_JOB_SECRET_FD", "",
     "the descriptor holding the job secret (one line of 32 hex digits; not the secret); "
     "read once and unset"},
    {"TSU_LOCAL_RANK", "", "this rank's index among the ranks on its node"},
    {"TSU_LOCAL_SIZE", "",
     "ranks on this node, where a launcher sets it (tsurun does not): libtsunagi-ult's "
     "default worker count reads it when tsu_init has not run"},
};
}  // namespace

std::span<const EnvironmentVariable> user_settings() { return kUser; }
std::span<const EnvironmentVariable> launcher_variables() { return kLauncher; }

}  // namespace tsu::bootstrap
