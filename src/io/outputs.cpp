#include "io/outputs.h"

#include <filesystem>

#include "io/atomic_file.h"
#include "io/io_error.h"
#include "io/json_write.h"
#include "io/npy.h"

namespace ab {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string render_extra_only(const nlohmann::ordered_json& extra) {
  std::string out;
  append_json_value(out, extra);
  return out;
}

std::vector<std::string> names_for(const std::vector<Array>& results,
                                   const std::vector<std::string>& names) {
  if (names.size() == results.size()) return names;
  std::vector<std::string> out;
  for (size_t k = 0; k < results.size(); ++k) out.push_back("out" + std::to_string(k));
  return out;
}

Diagnostics write_stream(std::ostream& out, const std::string& text) {
  out << text << '\n';
  out.flush();
  if (!out) return io_error("cannot write the outputs to standard output");
  return Diagnostics{};
}

}  // namespace

Result<OutputTarget> parse_output_target(const std::string& arg) {
  if (arg.empty() || arg == "-") return OutputTarget{OutputTarget::Kind::Stdout, ""};
  if (arg.back() == '/') {
    std::string dir = arg;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return OutputTarget{OutputTarget::Kind::Directory, dir};
  }
  if (ends_with(arg, ".json")) return OutputTarget{OutputTarget::Kind::JsonFile, arg};
  if (ends_with(arg, ".npy")) return OutputTarget{OutputTarget::Kind::NpyFile, arg};
  std::error_code ec;
  std::string hint = std::filesystem::is_directory(arg, ec)
                         ? " ('" + arg + "' is a directory: write '" + arg + "/')"
                         : "";
  return io_error("--output '" + arg + "': expected FILE.json, FILE.npy or DIR/" + hint);
}

std::string render_outputs_json(const std::vector<Array>& results, int64_t batch,
                                const nlohmann::ordered_json& extra,
                                const std::vector<std::string>& names) {
  std::string out = "{\"outputs\": [";
  for (size_t k = 0; k < results.size(); ++k) {
    if (k) out += ", ";
    append_array_json(out, results[k], batch);
  }
  out += "], \"names\": [";
  const std::vector<std::string> named = names_for(results, names);
  for (size_t k = 0; k < named.size(); ++k) {
    if (k) out += ", ";
    out += nlohmann::json(named[k]).dump();
  }
  out += ']';
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.key() == "outputs" || it.key() == "names") continue;
      out += ", ";
      out += nlohmann::json(it.key()).dump();
      out += ": ";
      append_json_value(out, it.value());
    }
  }
  out += '}';
  return out;
}

Result<std::vector<std::string>> write_outputs(const std::vector<Array>& results, int64_t batch,
                                               const OutputTarget& target,
                                               const nlohmann::ordered_json& extra,
                                               std::ostream& out,
                                               const std::vector<PendingFile>& beside,
                                               const std::vector<std::string>& names) {
  using Kind = OutputTarget::Kind;
  std::vector<PendingFile> files;
  switch (target.kind) {
    case Kind::Stdout: {
      Diagnostics d = write_stream(out, render_outputs_json(results, batch, extra, names));
      if (d.has_errors()) return d;
      return std::vector<std::string>{};
    }
    case Kind::JsonFile:
      files.push_back({target.path, render_outputs_json(results, batch, extra, names) + "\n"});
      break;
    case Kind::NpyFile:
      if (results.size() != 1)
        return io_error("--output '" + target.path +
                        "': a .npy file holds exactly one result, but the entry returns " +
                        std::to_string(results.size()) +
                        "; use --output DIR/ for one .npy file per result");
      files.push_back(npy_file(target.path, results[0], batch));
      break;
    case Kind::Directory: {
      std::error_code ec;
      std::filesystem::create_directories(target.path, ec);
      if (ec || !std::filesystem::is_directory(target.path))
        return io_error("--output '" + target.path + "/': cannot create the directory" +
                        (ec ? ": " + ec.message() : std::string(": a file of that name exists")));
      const std::vector<std::string> named = names_for(results, names);
      for (size_t k = 0; k < results.size(); ++k)
        files.push_back(npy_file(
            (std::filesystem::path(target.path) / (named[k] + ".npy")).string(), results[k],
            batch));
      break;
    }
  }
  const std::filesystem::path dir = target.kind == Kind::Directory
                                        ? std::filesystem::path(target.path)
                                        : std::filesystem::path(target.path).parent_path();
  for (const PendingFile& f : beside) {
    files.push_back(f);
    files.back().path = (dir / f.path).string();
  }
  auto written = write_files_atomically(files);
  if (!written.ok()) return written;
  if (target.kind != Kind::JsonFile && extra.is_object() && !extra.empty()) {
    Diagnostics d = write_stream(out, render_extra_only(extra));
    if (d.has_errors()) return d;
  }
  return written;
}

}  // namespace ab
