// dezero/core/config.cpp - Config and its RAII guards: no_grad (step 18), test_mode (step 54),
// using_config. The flags are thread_local: each thread records graphs or not on its own.
#include <string>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

// --- Config (step 18) -------------------------------------------------------------
[[gnu::tls_model("initial-exec")]] thread_local bool Config::enable_backprop = true;
[[gnu::tls_model("initial-exec")]] thread_local bool Config::train = true;

namespace {
bool* config_flag(const std::string& name) {
  if (name == "enable_backprop") return &Config::enable_backprop;
  if (name == "train") return &Config::train;
  detail::fail<ValueError>("using_config", "unknown configuration '", name,
                           "'; hint: the names are \"enable_backprop\" and \"train\"");
}
}  // namespace

ConfigGuard::ConfigGuard(const std::string& name, bool value) : flag_(config_flag(name)), old_(*flag_) { *flag_ = value; }
ConfigGuard::ConfigGuard(ConfigGuard&& o) noexcept : flag_(o.flag_), old_(o.old_) { o.flag_ = nullptr; }
ConfigGuard::~ConfigGuard() {
  if (flag_) *flag_ = old_;
}
// --- autocast (mixed precision) -----------------------------------------------------
[[gnu::tls_model("initial-exec")]] thread_local DType Config::autocast = DType::Float32;

AutocastGuard::AutocastGuard(DType dtype) : old_(Config::autocast) {
  if (dtype != DType::BFloat16 && dtype != DType::Float16 && dtype != DType::Float32)
    throw DtypeError(std::string("autocast: ") + dtype_name(dtype) +
                     " is not a type products can be computed in; hint: use dezero::bfloat16 or dezero::float16 (or "
                     "dezero::float32 to turn mixed precision off inside the scope)");
  Config::autocast = dtype;
}
AutocastGuard::AutocastGuard(AutocastGuard&& o) noexcept : old_(o.old_) { o.active_ = false; }
AutocastGuard::~AutocastGuard() {
  if (active_) Config::autocast = old_;
}
AutocastGuard autocast(DType dtype) { return AutocastGuard(dtype); }

ConfigGuard using_config(const std::string& name, bool value) { return ConfigGuard(name, value); }
ConfigGuard no_grad() { return ConfigGuard("enable_backprop", false); }
ConfigGuard test_mode() { return ConfigGuard("train", false); }

}  // namespace dezero
