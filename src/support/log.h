// Diagnostic logging on stderr (spdlog underneath): what the compiler and
// the run are doing, with timings. Silent unless a level is set (the CLI's
// -v / --log-level). Only log.cpp includes spdlog, so the rest of the code
// does not pay for its headers.
#pragma once
#include <optional>
#include <string>

namespace ab {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Off };

// "trace", "debug", "info", "warn", "error" or "off"; nullopt otherwise.
std::optional<LogLevel> parse_log_level(const std::string& name);
const char* log_level_names();  // "trace, debug, info, warn, error, off"

void set_log_level(LogLevel level);  // default: Off
bool log_enabled(LogLevel level);

// One line on stderr: `autobatch: [info] message`.
void log_message(LogLevel level, const std::string& message);
inline void log_info(const std::string& message) { log_message(LogLevel::Info, message); }
inline void log_debug(const std::string& message) { log_message(LogLevel::Debug, message); }

}  // namespace ab
