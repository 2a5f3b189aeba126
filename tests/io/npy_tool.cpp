// Test-only driver for the NumPy cross-check (numpy_roundtrip.py): exposes
// our .npy reader and writer, --inputs loading and the output writer on the
// command line, so that NumPy can produce what we read and check what we
// write.
//
//   npy_tool copy IN.npy OUT.npy           read with our reader, write with our writer
//   npy_tool input IN.npy [TYPE]           load as parameter x (declared TYPE, e.g. f64[3]); print
//   outputs JSON npy_tool fromjson JSON TYPE... OUT     load inline JSON for parameters p0, p1, ...
//   and write them to OUT
//                                          (FILE.npy, DIR/ or FILE.json) as the outputs of a run
//
// Exit status: 0 on success, 1 with the error messages on stderr.
#include <iostream>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/inputs.h"
#include "io/npy.h"
#include "io/outputs.h"

using namespace ab;

namespace {

int fail(const Diagnostics& d) {
  for (const auto& item : d.items()) std::cerr << "error: " << item.message << "\n";
  return 1;
}

// "f64", "i32[3]", "f32[2,2]" or "any" (no declared type).
std::optional<Type> parse_type(const std::string& text) {
  if (text == "any") return std::nullopt;
  size_t bracket = text.find('[');
  auto dtype = parse_dtype(text.substr(0, bracket));
  if (!dtype) {
    std::cerr << "npy_tool: bad type '" << text << "'\n";
    std::exit(2);
  }
  Shape shape;
  if (bracket != std::string::npos) {
    std::string dims = text.substr(bracket + 1, text.size() - bracket - 2);
    size_t pos = 0;
    while (pos < dims.size()) {
      size_t comma = dims.find(',', pos);
      if (comma == std::string::npos) comma = dims.size();
      shape.push_back(std::stoll(dims.substr(pos, comma - pos)));
      pos = comma + 1;
    }
  }
  return Type::tensor_of(*dtype, shape);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "copy") {
    auto npy = read_npy_file(args[1]);
    if (!npy.ok()) return fail(npy.diags());
    auto written =
        write_files_atomically({{args[2], encode_npy(npy->dtype, npy->shape, npy->data.data())}});
    return written.ok() ? 0 : fail(written.diags());
  }
  if ((args.size() == 2 || args.size() == 3) && args[0] == "input") {
    std::optional<Type> declared = args.size() == 3 ? parse_type(args[2]) : std::nullopt;
    auto inputs = load_inputs({"x=" + args[1]}, {{"x", declared}}, std::nullopt);
    if (!inputs.ok()) return fail(inputs.diags());
    std::cout << render_outputs_json(inputs->values, inputs->batch) << "\n";
    return 0;
  }
  if (args.size() >= 4 && args[0] == "fromjson") {
    std::vector<ParamSpec> params;
    for (size_t k = 2; k + 1 < args.size(); ++k)
      params.push_back({"p" + std::to_string(k - 2), parse_type(args[k])});
    auto inputs = load_inputs({args[1]}, params, std::nullopt);
    if (!inputs.ok()) return fail(inputs.diags());
    auto target = parse_output_target(args.back());
    if (!target.ok()) return fail(target.diags());
    auto written = write_outputs(inputs->values, inputs->batch, *target);
    return written.ok() ? 0 : fail(written.diags());
  }
  std::cerr << "usage: npy_tool copy IN OUT | input IN [TYPE] | fromjson JSON TYPE... OUT\n";
  return 2;
}
