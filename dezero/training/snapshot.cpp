// dezero/training/snapshot.cpp - Snapshot: the whole training state as named arrays (the keys are
// documented in training.hpp), written as one .npz through save_npz's atomic write, and read
// back with every part checked before any part changes.
//
// Order of a load: parse the file, check the format version, check every part against what
// was added (pure checks, nothing changes), then apply: the model, the optimizer (whose own
// load_state_dict checks its state against the parameters just set; if it refuses, the
// model's old tensors are put back), the loaders, the streams, the loop's values.

#include <algorithm>
#include <climits>
#include <map>

#include "dezero/fail.hpp"
#include "dezero/training.hpp"

namespace dezero::training {

namespace {

using dezero::detail::fail;

// A string as int32 character codes (readable in NumPy: bytes(a.astype('u1')).decode()).
Tensor string_array(const std::string& s) {
  std::vector<std::int32_t> codes(s.begin(), s.end());
  for (auto& c : codes) c &= 0xff;
  return array(codes, int32);
}

std::string array_string(const Tensor& t) {
  std::string s;
  for (std::int64_t c : t.astype(int64).to_vector<std::int64_t>())
    s += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
  return s;
}

Tensor int_scalar(std::int64_t v) { return full({}, static_cast<double>(v), int64); }

void put_generator(utils::NamedTensors& out, const std::string& prefix, const random::Generator& g) {
  const random::GeneratorState st = g.get_state();
  std::vector<std::int64_t> key(st.key.begin(), st.key.end());
  out.emplace_back(prefix + "/key", array(key, int64));
  out.emplace_back(prefix + "/pos", int_scalar(st.pos));
  out.emplace_back(prefix + "/has_gauss", int_scalar(st.has_gauss ? 1 : 0));
  out.emplace_back(prefix + "/cached_gaussian", full({}, st.cached_gaussian, float64));
}

// The arrays of a load, by key, each taken once; what is left at the end is extra.
struct Arrays {
  std::map<std::string, Tensor> by_key;
  std::string where;

  const Tensor& take(const std::string& key) {
    auto it = by_key.find(key);
    if (it == by_key.end())
      throw ValueError(where + " has no array '" + key + "'; hint: was it written for another model, optimizer or "
                       "training loop (what was added to the Snapshot must match)?");
    return it->second;
  }
  void done(const std::string& key) { by_key.erase(key); }

  std::int64_t integer(const std::string& key) {
    const Tensor& t = take(key);
    if (t.ndim() != 0 || is_floating(t.dtype()))
      fail<ValueError>(where.c_str(), "'", key, "' must be one integer (int64 ()), got ", t.shape(), " ", t.dtype());
    const std::int64_t v = t.astype(int64).item<std::int64_t>();
    done(key);
    return v;
  }
  double real(const std::string& key) {
    const Tensor& t = take(key);
    if (t.ndim() != 0 || t.dtype() != float64)
      fail<ValueError>(where.c_str(), "'", key, "' must be one float64 (), got ", t.shape(), " ", t.dtype());
    const double v = t.item<double>();
    done(key);
    return v;
  }
};

random::GeneratorState take_generator(Arrays& a, const std::string& prefix) {
  random::GeneratorState st;
  const Tensor& key = a.take(prefix + "/key");
  if (key.shape() != Shape{624} || is_floating(key.dtype()))
    fail<ValueError>(a.where.c_str(), "'", prefix, "/key' must be 624 integers, got ", key.shape(), " ", key.dtype());
  const std::vector<std::int64_t> words = key.astype(int64).to_vector<std::int64_t>();
  bool all_zero = true;
  for (std::size_t i = 0; i < 624; ++i) {
    if (words[i] < 0 || words[i] > 0xffffffffLL)
      fail<ValueError>(a.where.c_str(), "'", prefix, "/key' holds ", words[i], ", not a 32-bit word (0..4294967295)");
    st.key[i] = static_cast<std::uint32_t>(words[i]);
    all_zero = all_zero && words[i] == 0;
  }
  if (all_zero) fail<ValueError>(a.where.c_str(), "'", prefix, "/key' is all zeros, a state MT19937 never reaches");
  a.done(prefix + "/key");
  const std::int64_t pos = a.integer(prefix + "/pos");
  if (pos < 0 || pos > 624)
    fail<ValueError>(a.where.c_str(), "'", prefix, "/pos' is ", pos, ", outside 0..624");
  st.pos = static_cast<int>(pos);
  const std::int64_t hg = a.integer(prefix + "/has_gauss");
  if (hg != 0 && hg != 1)
    fail<ValueError>(a.where.c_str(), "'", prefix, "/has_gauss' is ", hg, ", not 0 or 1");
  st.has_gauss = hg == 1;
  st.cached_gaussian = a.real(prefix + "/cached_gaussian");
  return st;
}

}  // namespace

// --- what a snapshot holds ---------------------------------------------------------------------
void Snapshot::check_name(const std::string& what, const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos)
    throw ValueError("Snapshot::" + what + ": the name '" + name +
                     "' must be non-empty and have no '/' (it becomes part of a key)");
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  const bool dup = what == "loader"      ? taken(loaders_)
                   : what == "generator" ? (taken(generators_) || name == "global")
                                         : std::any_of(values_.begin(), values_.end(),
                                                       [&](const Value& v) { return v.name == name; });
  if (dup) throw ValueError("Snapshot::" + what + ": the name '" + name + "' is taken");
}

Snapshot& Snapshot::model(L::Layer& m) {
  model_ = &m;
  return *this;
}
Snapshot& Snapshot::optimizer(optimizers::Optimizer& o) {
  optimizer_ = &o;
  return *this;
}
Snapshot& Snapshot::loader(const std::string& name, DataLoader& l) {
  check_name("loader", name);
  loaders_.emplace_back(name, &l);
  return *this;
}
Snapshot& Snapshot::generator(const std::string& name, random::Generator g) {
  check_name("generator", name);
  generators_.emplace_back(name, std::move(g));
  return *this;
}
Snapshot& Snapshot::value(const std::string& name, int& v) {
  check_name("value", name);
  values_.push_back(Value{name, &v, nullptr, nullptr, nullptr});
  return *this;
}
Snapshot& Snapshot::value(const std::string& name, std::int64_t& v) {
  check_name("value", name);
  values_.push_back(Value{name, nullptr, &v, nullptr, nullptr});
  return *this;
}
Snapshot& Snapshot::value(const std::string& name, double& v) {
  check_name("value", name);
  values_.push_back(Value{name, nullptr, nullptr, &v, nullptr});
  return *this;
}
Snapshot& Snapshot::value(const std::string& name, std::vector<double>& v) {
  check_name("value", name);
  values_.push_back(Value{name, nullptr, nullptr, nullptr, &v});
  return *this;
}

// --- save ------------------------------------------------------------------------------------
utils::NamedTensors Snapshot::state() const {
  utils::NamedTensors out;
  out.emplace_back("snapshot/format_version", int_scalar(kFormatVersion));
  if (model_) {
    for (const auto& [key, p] : model_->named_params()) {
      if (!p.data().defined())
        fail<ValueError>("Snapshot", "the model's parameter '", key, "' has no data yet (lazily created); hint: "
                         "run one forward pass before the first snapshot");
      out.emplace_back("model/" + key, p.data());
    }
  }
  if (optimizer_) {
    out.emplace_back("optimizer/class", string_array(optimizer_->name()));
    for (auto& [k, t] : optimizer_->state_dict()) out.emplace_back("optimizer/" + k, t);
  }
  put_generator(out, "random/global", random::Generator::global());
  for (const auto& [name, g] : generators_) put_generator(out, "random/" + name, g);
  for (const auto& [name, l] : loaders_) {
    const std::string p = "loader/" + name;
    out.emplace_back(p + "/epoch", int_scalar(l->epoch()));
    out.emplace_back(p + "/iteration", int_scalar(l->iteration()));
    out.emplace_back(p + "/index", array(l->index(), int64));
    if (!l->generator().is_global()) put_generator(out, "random/loader." + name, l->generator());
  }
  for (const Value& v : values_) {
    const std::string k = "value/" + v.name;
    if (v.i32) out.emplace_back(k, int_scalar(*v.i32));
    else if (v.i64) out.emplace_back(k, int_scalar(*v.i64));
    else if (v.f64) out.emplace_back(k, full({}, *v.f64, float64));
    else out.emplace_back(k, array(*v.curve, float64));
  }
  return out;
}

void Snapshot::save(const std::string& path) const { utils::save_npz(path, state(), false); }

// --- load ------------------------------------------------------------------------------------
void Snapshot::load(const std::string& path) {
  load_state(utils::detail::load_npz_as("Snapshot::load", path), "Snapshot::load: '" + path + "'");
}

void Snapshot::load_state(const utils::NamedTensors& file, const std::string& where) {
  Arrays a;
  a.where = where;
  for (const auto& [k, t] : file)
    if (!a.by_key.emplace(k, t).second) throw ValueError(where + " has the array '" + k + "' twice");

  // 1. The format.
  if (!a.by_key.count("snapshot/format_version"))
    throw ValueError(where + " has no 'snapshot/format_version'; hint: is it a training snapshot (Snapshot::save)? "
                     "A weight file loads with load_weights, an optimizer state with load_state");
  const std::int64_t version = a.integer("snapshot/format_version");
  if (version != kFormatVersion)
    throw ValueError(where + " is in snapshot format " + std::to_string(version) + "; this dezero reads format " +
                     std::to_string(kFormatVersion));

  // 2. Every part checked; nothing changes yet.
  std::vector<std::pair<Parameter, Tensor>> params;  // the model's new data
  if (model_) {
    Device dev = Device::cpu();
    const auto named = model_->named_params();
    for (const auto& [key, p] : named)
      if (p.data().defined()) {
        dev = p.data().device();
        break;
      }
    for (const auto& [key, p] : named) {
      const std::string k = "model/" + key;
      const Tensor& t = a.take(k);
      if (p.data().defined()) {
        if (t.shape() != p.data().shape())
          fail<ShapeError>(where.c_str(), "'", k, "' has shape ", t.shape(), " but the model's parameter has ",
                           p.data().shape(), "; hint: the snapshot is of another model");
        if (t.dtype() != p.data().dtype())
          fail<DtypeError>(where.c_str(), "'", k, "' is ", t.dtype(), " but the model's parameter is ",
                           p.data().dtype());
      } else if (!is_floating(t.dtype())) {
        fail<DtypeError>(where.c_str(), "'", k, "' is ", t.dtype(), ", not a floating dtype");
      }
      params.emplace_back(p, t);
      a.done(k);
    }
    for (auto& [p, t] : params) t = t.to(p.data().defined() ? p.data().device() : dev);
  }
  utils::NamedTensors opt_state;
  if (optimizer_) {
    const std::string want = optimizer_->name();
    const std::string got = array_string(a.take("optimizer/class"));
    if (detail::without_namespaces(got) != want)  // files of before Optimizer::name(): the C++ name
      throw ValueError(where + " holds the state of the optimizer " + got + ", not of this " + want +
                       "; hint: resume with the optimizer the run was started with");
    a.done("optimizer/class");
    for (auto it = a.by_key.begin(); it != a.by_key.end();) {
      if (it->first.rfind("optimizer/", 0) == 0) {
        opt_state.emplace_back(it->first.substr(10), it->second);
        it = a.by_key.erase(it);
      } else {
        ++it;
      }
    }
  }
  struct LoaderPos {
    DataLoader* loader;
    std::int64_t epoch, iteration;
    std::vector<std::int64_t> index;
  };
  std::vector<LoaderPos> positions;
  std::vector<std::pair<random::Generator, random::GeneratorState>> streams;
  streams.emplace_back(random::Generator::global(), take_generator(a, "random/global"));
  for (const auto& [name, g] : generators_) streams.emplace_back(g, take_generator(a, "random/" + name));
  for (const auto& [name, l] : loaders_) {
    const std::string p = "loader/" + name;
    LoaderPos lp{l, a.integer(p + "/epoch"), a.integer(p + "/iteration"), {}};
    const Tensor& idx = a.take(p + "/index");
    if (idx.ndim() != 1 || is_floating(idx.dtype()))
      fail<ValueError>(where.c_str(), "'", p, "/index' must be a 1-d integer array, got ", idx.shape(), " ",
                       idx.dtype());
    lp.index = idx.astype(int64).to_vector<std::int64_t>();
    a.done(p + "/index");
    // set_position's checks, made now on a copy of the loader's numbers
    if (lp.epoch < 0 || lp.iteration < 0 || lp.iteration > l->size() ||
        static_cast<std::int64_t>(lp.index.size()) != l->data_size())
      fail<ValueError>(where.c_str(), "loader '", name, "' was at epoch ", lp.epoch, ", batch ", lp.iteration, " of ",
                       lp.index.size(), " samples; this loader has ", l->data_size(), " samples in ", l->size(),
                       " batches; hint: the snapshot is of another data set or batch size");
    std::vector<char> seen(lp.index.size(), 0);
    for (std::size_t i = 0; i < lp.index.size(); ++i) {
      const std::int64_t k = lp.index[i];
      if (k < 0 || k >= l->data_size() || seen[static_cast<std::size_t>(k)] ||
          (!l->shuffle() && k != static_cast<std::int64_t>(i)))
        fail<ValueError>(where.c_str(), "'", p, "/index' is not ",
                         l->shuffle() ? "a permutation of 0.." : "0, 1, ..., ", l->data_size() - 1,
                         " (this loader's order)");
      seen[static_cast<std::size_t>(k)] = 1;
    }
    if (!l->generator().is_global())
      streams.emplace_back(l->generator(), take_generator(a, "random/loader." + name));
    positions.push_back(std::move(lp));
  }
  struct ValueIn {
    const Value* v;
    Tensor t;
  };
  std::vector<ValueIn> values;
  for (const Value& v : values_) {
    const std::string k = "value/" + v.name;
    const Tensor& t = a.take(k);
    const bool ok = v.curve ? (t.ndim() == 1 && t.dtype() == float64)
                    : v.f64 ? (t.ndim() == 0 && t.dtype() == float64)
                            : (t.ndim() == 0 && !is_floating(t.dtype()));
    if (!ok)
      fail<ValueError>(where.c_str(), "'", k, "' is ", t.shape(), " ", t.dtype(), ", expected ",
                       v.curve ? "float64 (n,)" : v.f64 ? "float64 ()" : "an integer ()");
    if (v.i32) {
      const std::int64_t x = t.astype(int64).item<std::int64_t>();
      if (x < INT32_MIN || x > INT32_MAX)
        fail<ValueError>(where.c_str(), "'", k, "' is ", x, ", past an int");
    }
    values.push_back(ValueIn{&v, t});
    a.done(k);
  }
  if (!a.by_key.empty())
    throw ValueError(where + " has an array '" + a.by_key.begin()->first +
                     "' that nothing added to this Snapshot takes; hint: add the same model, optimizer, loaders, "
                     "streams and values as the run that wrote it");

  // 3. Apply. Only the optimizer can still refuse (its state against the new parameters).
  std::vector<Tensor> old_data;
  for (auto& [p, t] : params) {
    old_data.push_back(p.data());
    p.set_data(t);
  }
  if (optimizer_) {
    try {
      optimizer_->load_state_dict(opt_state, where);
    } catch (...) {
      for (std::size_t i = 0; i < params.size(); ++i) params[i].first.set_data(old_data[i]);
      throw;
    }
  }
  for (LoaderPos& lp : positions) lp.loader->set_position(lp.epoch, lp.iteration, lp.index);
  for (auto& [g, st] : streams) g.set_state(st);
  for (const ValueIn& in : values) {
    if (in.v->i32) *in.v->i32 = static_cast<int>(in.t.astype(int64).item<std::int64_t>());
    else if (in.v->i64) *in.v->i64 = in.t.astype(int64).item<std::int64_t>();
    else if (in.v->f64) *in.v->f64 = in.t.item<double>();
    else *in.v->curve = in.t.to_vector<double>();
  }
}

}  // namespace dezero::training
