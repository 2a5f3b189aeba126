// The MPI calls of the run over processes (internal.h): broadcasts, point
// to point messages, gathers, the end of a phase every process agrees on,
// and the count of processes sharing this node's cores.
#include <algorithm>
#include <climits>
#include <iostream>
#include <thread>

#include "mpi/internal.h"

namespace ab::mpi {

void bcast(World, std::string& s) {
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(n));
  // In pieces below INT_MAX bytes (MPI counts are int).
  for (int64_t at = 0; at < n; at += INT_MAX / 2)
    MPI_Bcast(s.data() + at, static_cast<int>(std::min<int64_t>(n - at, INT_MAX / 2)), MPI_BYTE, 0,
              MPI_COMM_WORLD);
}

void send(const std::string& s, int to, int tag) {
  MPI_Send(s.data(), static_cast<int>(s.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

std::string recv(int from, int tag, int* source) {
  MPI_Status st;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::string s(static_cast<size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (source) *source = st.MPI_SOURCE;
  return s;
}

// Waits until every process gets here without keeping a core busy: Open
// MPI's blocking calls poll, so a process that finished its share early
// would take CPU from those still running wherever processes share cores.
void wait_for_all() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Every process's `mine`, on rank 0 (empty elsewhere).
std::vector<std::string> gather(World w, const std::string& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<size_t>(w.size)), offsets(static_cast<size_t>(w.size));
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (w.rank == 0) {
    int64_t total = 0;
    for (int r = 0; r < w.size; ++r) {
      offsets[r] = static_cast<int>(total);
      total += sizes[r];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(mine.data(), n, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (w.rank == 0)
    for (int r = 0; r < w.size; ++r) out.push_back(all.substr(offsets[r], sizes[r]));
  return out;
}

// Ends a phase: the worst exit status of all processes; if not ok, rank 0
// prints the message of the first process (by rank) that has one.
int agree(World w, int code, const std::string& message) {
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == kOk) return kOk;
  std::vector<std::string> all = gather(w, code != kOk ? message : std::string());
  if (w.rank == 0)
    for (const auto& m : all)
      if (!m.empty()) {
        std::cerr << m;
        break;
      }
  return worst;
}

int processes_on_this_node() {  // collective
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 1;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  return on_node;
}

}  // namespace ab::mpi
