#include "support/large_stack.h"

#include <pthread.h>

#include <exception>

namespace ab {

void with_large_stack(const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    std::exception_ptr error;
  } job{&f, nullptr};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return f();
  pthread_t thread;
  const bool made =
      pthread_attr_setstacksize(&attr, size_t{1} << 30) == 0 &&
      pthread_create(
          &thread, &attr,
          [](void* p) -> void* {
            auto* j = static_cast<Job*>(p);
            try {
              (*j->f)();
            } catch (...) {
              j->error = std::current_exception();
            }
            return nullptr;
          },
          &job) == 0;
  pthread_attr_destroy(&attr);
  if (!made) return f();
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace ab
