#include "support/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace ab {

namespace {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> l = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto made = std::make_shared<spdlog::logger>("autobatch", sink);
    made->set_pattern("autobatch: [%l] %v");
    made->set_level(spdlog::level::off);
    return made;
  }();
  return *l;
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::Trace:
      return spdlog::level::trace;
    case LogLevel::Debug:
      return spdlog::level::debug;
    case LogLevel::Info:
      return spdlog::level::info;
    case LogLevel::Warn:
      return spdlog::level::warn;
    case LogLevel::Error:
      return spdlog::level::err;
    case LogLevel::Off:
      return spdlog::level::off;
  }
  return spdlog::level::off;
}

struct LevelName {
  const char* name;
  LogLevel level;
};
constexpr LevelName kLevels[] = {{"trace", LogLevel::Trace}, {"debug", LogLevel::Debug},
                                 {"info", LogLevel::Info},   {"warn", LogLevel::Warn},
                                 {"error", LogLevel::Error}, {"off", LogLevel::Off}};

}  // namespace

std::optional<LogLevel> parse_log_level(const std::string& name) {
  for (const auto& l : kLevels)
    if (name == l.name) return l.level;
  return std::nullopt;
}

const char* log_level_names() { return "trace, debug, info, warn, error, off"; }

void set_log_level(LogLevel level) { logger().set_level(to_spdlog(level)); }

bool log_enabled(LogLevel level) { return logger().should_log(to_spdlog(level)); }

void log_message(LogLevel level, const std::string& message) {
  logger().log(to_spdlog(level), "{}", message);
  logger().flush();
}

}  // namespace ab
