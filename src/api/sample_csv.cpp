// A sample's draws as CmdStan writes them (`sample --csv DIR/`): one
// DIR/output_N.csv per chain (N from 1), with CmdStan's comment lines (the
// settings, the adaptation's step size and inverse metric, the timing), its
// header (lp__, accept_stat__, stepsize__, treedepth__, n_leapfrog__,
// divergent__, energy__, then each draw's elements named NAME.i.j from 1)
// and one row per draw, so that ArviZ's from_cmdstan, R's posterior and
// CmdStan's stansummary read them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/internal.h"

namespace autobatch {

namespace {

namespace fs = std::filesystem;

// Element k (row-major) of an event of shape `event`, named NAME.i.j from 1.
std::string stan_column(const std::string& name, const std::vector<int64_t>& event, int64_t k) {
  std::string out = name;
  std::vector<int64_t> idx(event.size());
  for (size_t d = event.size(); d-- > 0;) {
    idx[d] = k % event[d];
    k /= event[d];
  }
  for (int64_t i : idx) out += "." + std::to_string(i + 1);
  return out;
}

// A value as text: integers and booleans exactly, floats with 17 digits
// (every double read back as itself).
std::string cell(const Array& a, int64_t i) {
  char buf[32];
  switch (a.dtype()) {
    case DType::F64:
      std::snprintf(buf, sizeof buf, "%.17g", a.as<double>()[i]);
      break;
    case DType::F32:
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(a.as<float>()[i]));
      break;
    case DType::I64:
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(a.as<int64_t>()[i]));
      break;
    case DType::I32:
      std::snprintf(buf, sizeof buf, "%d", a.as<int32_t>()[i]);
      break;
    case DType::Bool:
      std::snprintf(buf, sizeof buf, "%d", a.as<uint8_t>()[i] ? 1 : 0);
      break;
  }
  return buf;
}

const Array* stat(const SampleResult& s, const char* name) {
  for (const auto& [n, a] : s.stats)
    if (n == name) return &a;
  return nullptr;
}

}  // namespace

Status write_cmdstan_csv(const SampleResult& s, const SampleOptions& o, const std::string& dir) {
  auto fail = [](const std::string& m) { return Status{{option_error(m)}}; };
  if (dir.empty() || dir.back() != '/')
    return fail("--csv takes a folder, written with a final '/' (say out/csv/): it gets one "
                "output_N.csv per chain");
  const int64_t chains = s.step_size.batch();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create the folder " + dir + ": " + ec.message());
  const char* stats[] = {"lp__",       "accept_stat__", "stepsize__", "treedepth__",
                         "n_leapfrog__", "divergent__", "energy__"};
  const bool integer_stat[] = {false, false, false, true, true, true, false};
  std::string header;
  for (const char* n : stats) header += std::string(header.empty() ? "" : ",") + n;
  for (const auto& [name, a] : s.draws) {
    const std::vector<int64_t> event(a.shape().begin() + 2, a.shape().end());
    int64_t per = 1;
    for (int64_t d : event) per *= d;
    for (int64_t k = 0; k < per; ++k) header += "," + stan_column(name, event, k);
  }
  // The inverse metric per chain: its diagonal [D], or the whole [D, D].
  const bool dense = s.inv_metric.shape().size() == 3;
  const int64_t dim = s.inv_metric.shape().size() >= 2 ? s.inv_metric.shape()[1] : 0;
  for (int64_t c = 0; c < chains; ++c) {
    std::string t;
    t += "# model = " + fs::path(o.model).stem().string() + "\n";
    t += "# method = sample (Default)\n#   sample\n";
    t += "#     num_samples = " + std::to_string(o.samples) + "\n";
    t += "#     num_warmup = " + std::to_string(o.warmup) + "\n";
    t += "#     save_warmup = 0 (Default)\n#     thin = 1 (Default)\n";
    t += "#     adapt\n#       engaged = 1 (Default)\n";
    t += "#       delta = " + std::to_string(o.target_accept) + "\n";
    t += "#     algorithm = hmc (Default)\n#       hmc\n#         engine = nuts (Default)\n";
    t += "#           nuts\n#             max_depth = " + std::to_string(o.max_depth) + "\n";
    t += dense ? "#         metric = dense_e\n" : "#         metric = diag_e (Default)\n";
    t += "# id = " + std::to_string(c + 1) + "\n";
    t += "# random\n#   seed = " + std::to_string(s.seed) + "\n";
    t += "# written by autobatch sample (the parameters are the model's theta, unconstrained, "
         "and its constrain's quantities)\n";
    t += header + "\n";
    t += "# Adaptation terminated\n# Step size = " + cell(s.step_size, c) + "\n";
    // CmdStan's layout: the diagonal on one line, or the matrix a row per line.
    if (dense) {
      t += "# Elements of inverse mass matrix:\n";
      for (int64_t i = 0; i < dim; ++i) {
        t += "# ";
        for (int64_t k = 0; k < dim; ++k)
          t += (k ? ", " : "") + cell(s.inv_metric, (c * dim + i) * dim + k);
        t += "\n";
      }
    } else {
      t += "# Diagonal elements of inverse mass matrix:\n# ";
      for (int64_t k = 0; k < dim; ++k) t += (k ? ", " : "") + cell(s.inv_metric, c * dim + k);
      t += "\n";
    }
    const int64_t draws = o.samples;
    for (int64_t i = 0; i < draws; ++i) {
      std::string row;
      for (size_t k = 0; k < 7; ++k) {
        if (k) row += ",";
        if (k == 2) {
          row += cell(s.step_size, c);
          continue;
        }
        const Array* a = stat(s, stats[k]);
        if (!a) return fail(std::string("the sample has no ") + stats[k]);
        const double v = a->as<double>()[c * draws + i];
        row += integer_stat[k] ? std::to_string(static_cast<long long>(v)) : cell(*a, c * draws + i);
      }
      for (const auto& [name, a] : s.draws) {
        const int64_t per = a.num_elements() / std::max<int64_t>(1, chains * draws);
        for (int64_t k = 0; k < per; ++k) row += "," + cell(a, (c * draws + i) * per + k);
      }
      t += row + "\n";
    }
    t += "# \n#  Elapsed Time: " + std::to_string(s.seconds) +
         " seconds (Total, all chains run together)\n# \n";
    // Written whole to a temporary, then renamed: never a partial file.
    const std::string path = dir + "output_" + std::to_string(c + 1) + ".csv";
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary);
      f << t;
      if (!f.good()) {
        fs::remove(tmp, ec);
        return fail("cannot write " + path);
      }
    }
    fs::rename(tmp, path, ec);
    if (ec) return fail("cannot write " + path + ": " + ec.message());
  }
  return {};
}

}  // namespace autobatch
