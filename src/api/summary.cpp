// summarize, summarize_files: the convergence summary (src/sample) behind the
// public API, and `autobatch summary`'s table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "api/internal.h"
#include "io/npy.h"
#include "ir/type.h"
#include "sample/diagnostics.h"

namespace autobatch {

namespace {

constexpr double kRhatLimit = 1.01;  // Vehtari et al. (2021)
constexpr double kEssLimit = 400;    // their advice: at least 100 per chain for 4 chains
constexpr size_t kNamed = 5;         // quantities a warning names

// Why draws of `shape`, called `label`, cannot be summarized beside the first
// quantity's (`first`, of `first_shape`; null for the first itself); "" if they can.
std::string shape_problem(const std::string& label, const std::vector<int64_t>& shape,
                          const std::string& first, const std::vector<int64_t>* first_shape) {
  if (shape.size() < 2)
    return label + ": draws must be shaped [chains, draws, ...]; its shape is " +
           (shape.empty() ? std::string("[]") : ab::shape_str(shape));
  if (first_shape && (shape[0] != (*first_shape)[0] || shape[1] != (*first_shape)[1]))
    return label + ": " + std::to_string(shape[0]) + " chains of " + std::to_string(shape[1]) +
           " draws, where " + first + " has " + std::to_string((*first_shape)[0]) +
           " chains of " + std::to_string((*first_shape)[1]) + " draws";
  return "";
}

double element(const ArrayView& a, int64_t i) {
  switch (a.dtype) {
    case DType::F64: return static_cast<const double*>(a.data)[i];
    case DType::F32: return static_cast<const float*>(a.data)[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(a.data)[i]);
    case DType::I32: return static_cast<const int32_t*>(a.data)[i];
    case DType::Bool: return static_cast<const uint8_t*>(a.data)[i] ? 1.0 : 0.0;
  }
  return NAN;
}

// NAME[i, j] for element k of an event of `shape` (C order), NAME for a
// scalar; NAME[i+1,j+1] with Stan's names.
std::string element_name(const std::string& name, const std::vector<int64_t>& shape, int64_t k,
                         ElementNames names) {
  if (shape.empty()) return name;
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
  const bool stan = names == ElementNames::Stan;
  std::string s = name + "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? (stan ? "," : ", ") : "") + std::to_string(idx[d] + (stan ? 1 : 0));
  return s + "]";
}

std::string number(double v, const char* format) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "theta[3] 1.052, sigma 1.3, ..." for the rows `pick` chose (the first kNamed).
std::string some(const std::vector<const SummaryRow*>& rows, double SummaryRow::*field,
                 const char* format) {
  std::string s;
  for (size_t i = 0; i < rows.size() && i < kNamed; ++i)
    s += (i ? ", " : "") + rows[i]->name + " " + number(rows[i]->*field, format);
  if (rows.size() > kNamed) s += ", ...";
  return s;
}

void add_warnings(Summary& s) {
  std::vector<const SummaryRow*> high, low_bulk, low_tail;
  for (const SummaryRow& r : s.rows) {
    if (r.rhat > kRhatLimit) high.push_back(&r);
    if (r.ess_bulk < kEssLimit) low_bulk.push_back(&r);
    if (r.ess_tail < kEssLimit) low_tail.push_back(&r);
  }
  const std::string of = " of " + std::to_string(s.rows.size()) + " quantities (";
  if (!high.empty())
    s.warnings.push_back("R-hat above 1.01 for " + std::to_string(high.size()) + of +
                         some(high, &SummaryRow::rhat, "%.3f") +
                         "): the chains disagree; run them longer, or look for a "
                         "multimodal or badly scaled posterior");
  if (!low_bulk.empty())
    s.warnings.push_back("bulk ESS below 400 for " + std::to_string(low_bulk.size()) + of +
                         some(low_bulk, &SummaryRow::ess_bulk, "%.0f") +
                         "): means and medians are imprecise; draw more");
  if (!low_tail.empty())
    s.warnings.push_back("tail ESS below 400 for " + std::to_string(low_tail.size()) + of +
                         some(low_tail, &SummaryRow::ess_tail, "%.0f") +
                         "): the 5% and 95% quantiles are imprecise; draw more");
}

}  // namespace

Result<Summary> summarize(const std::vector<std::pair<std::string, ArrayView>>& draws, int64_t skip,
                          ElementNames names) {
  if (draws.empty()) return std::vector<Diagnostic>{option_error("no draws to summarize")};
  if (skip < 0) return std::vector<Diagnostic>{option_error("--skip must not be negative")};
  Summary s;
  for (size_t q = 0; q < draws.size(); ++q) {
    const auto& [name, a] = draws[q];
    const std::string why =
        shape_problem(name, a.shape, draws[0].first, q ? &draws[0].second.shape : nullptr);
    if (!why.empty()) return std::vector<Diagnostic>{option_error(why)};
    const int64_t chains = a.shape[0], total = a.shape[1];
    s.chains = chains;
    s.draws = total - skip;
    if (chains < 1 || total - skip < 1)
      return std::vector<Diagnostic>{option_error(
          name + ": no draws left to summarize (" + std::to_string(chains) + " chains of " +
          std::to_string(total) + " draws, skipping " + std::to_string(skip) + ")")};
    std::vector<int64_t> event(a.shape.begin() + 2, a.shape.end());
    int64_t elems = 1;
    for (int64_t d : event) elems *= d;
    const int64_t kept = total - skip;
    std::vector<double> x(static_cast<size_t>(chains * kept));
    for (int64_t k = 0; k < elems; ++k) {
      for (int64_t c = 0; c < chains; ++c)
        for (int64_t i = 0; i < kept; ++i)
          x[static_cast<size_t>(c * kept + i)] = element(a, (c * total + skip + i) * elems + k);
      const ab::sample::Summary m = ab::sample::summarize(x.data(), chains, kept);
      s.rows.push_back({element_name(name, event, k, names), m.mean, m.mcse, m.sd, m.q5, m.q50,
                        m.q95, m.ess_bulk, m.ess_tail, m.rhat});
    }
  }
  add_warnings(s);
  return s;
}

Result<Summary> summarize_files(const std::vector<std::string>& paths, int64_t skip,
                                ElementNames names) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> files;  // name, path
  std::set<std::string> from_dir;  // files found in a DIR/: skipped when not draws
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::pair<std::string, std::string>> in_dir;
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.path().extension() == ".npy") in_dir.emplace_back(e.path().stem(), e.path());
      if (in_dir.empty())
        return std::vector<Diagnostic>{option_error(p + ": a directory without .npy files")};
      std::sort(in_dir.begin(), in_dir.end());
      for (const auto& f : in_dir) from_dir.insert(f.second);
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::path(p).extension() == ".npy") {
      files.emplace_back(fs::path(p).stem(), p);
    } else {
      return std::vector<Diagnostic>{
          option_error(p + ": expected FILE.npy or a directory of them (DIR/)")};
    }
  }
  std::vector<ab::NpyArray> arrays;
  arrays.reserve(files.size());
  std::vector<std::pair<std::string, ArrayView>> views;
  std::string first;  // the first file summarized
  std::vector<std::string> skipped;
  for (const auto& [name, path] : files) {
    auto a = ab::read_npy_file(path);
    if (!a.ok()) return to_public(a.diags());
    arrays.push_back(a.take());
    const ab::NpyArray& n = arrays.back();
    // Checked here too, so that the message names the files, not only the quantities.
    const std::string why = shape_problem(path, n.shape, first.empty() ? path : first,
                                          views.empty() ? nullptr : &views[0].second.shape);
    if (!why.empty()) {
      // A directory of a run's outputs may hold other results beside the
      // draws (mh_gauss's accepted count): those are left out, and said so.
      if (!from_dir.count(path)) return std::vector<Diagnostic>{option_error(why)};
      skipped.push_back(why);
      continue;
    }
    if (first.empty()) first = path;
    views.push_back({name, ArrayView{to_public(n.dtype), n.shape, n.data.data()}});
  }
  if (views.empty()) return std::vector<Diagnostic>{option_error(skipped.front())};
  auto s = summarize(views, skip, names);
  if (s)
    for (size_t k = 0; k < skipped.size(); ++k)
      s->warnings.insert(s->warnings.begin() + static_cast<long>(k), "left out " + skipped[k]);
  return s;
}

std::string Summary::table() const {
  size_t w = 4;
  for (const SummaryRow& r : rows) w = std::max(w, r.name.size());
  const int nw = static_cast<int>(w);
  std::string out = std::to_string(chains) + " chains of " + std::to_string(draws) + " draws\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-*s %10s %10s %10s %10s %10s %10s %9s %9s %7s\n", nw, "", "Mean",
                "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat");
  out += buf;
  for (const SummaryRow& r : rows) {
    std::snprintf(buf, sizeof buf, "%-*s %10s %10s %10s %10s %10s %10s %9s %9s %7s\n", nw,
                  r.name.c_str(), number(r.mean, "%.4g").c_str(), number(r.mcse, "%.2g").c_str(),
                  number(r.sd, "%.4g").c_str(), number(r.q5, "%.4g").c_str(),
                  number(r.q50, "%.4g").c_str(), number(r.q95, "%.4g").c_str(),
                  number(r.ess_bulk, "%.0f").c_str(), number(r.ess_tail, "%.0f").c_str(),
                  number(r.rhat, "%.3f").c_str());
    out += buf;
  }
  return out;
}

std::string Summary::json() const {
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json j;
  j["chains"] = chains;
  j["draws"] = draws;
  j["rows"] = nlohmann::json::array();
  for (const SummaryRow& r : rows)
    j["rows"].push_back({{"name", r.name},
                         {"mean", num(r.mean)},
                         {"mcse", num(r.mcse)},
                         {"sd", num(r.sd)},
                         {"q5", num(r.q5)},
                         {"q50", num(r.q50)},
                         {"q95", num(r.q95)},
                         {"ess_bulk", num(r.ess_bulk)},
                         {"ess_tail", num(r.ess_tail)},
                         {"rhat", num(r.rhat)}});
  j["warnings"] = warnings;
  return j.dump();
}

}  // namespace autobatch
