// Two things tch does not expose: libtorch's warning handler (so that normal runs print no
// "Sparse CSR tensor support is in beta" lines) and the libtorch version the binary was built
// against (for `gnnaudit --version`).
#include <c10/util/Exception.h>
#include <torch/headeronly/version.h>

namespace {
// Drops every warning. c10 keeps the handler per thread, so each thread that may warn installs it.
class SilentHandler : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};
SilentHandler silent_handler;
}  // namespace

extern "C" void gnnaudit_silence_torch_warnings() {
  c10::WarningUtils::set_warning_handler(&silent_handler);
}

extern "C" const char* gnnaudit_torch_version() { return TORCH_VERSION; }
