// dezero/models.hpp - dezero::Model (a Layer that can plot itself, step 45) and
// dezero::models: Sequential and MLP (DeZero models.py).
//
//   dezero::models::MLP model({10, 1});                       // l0 = Linear(10), l1 = Linear(1)
//   dezero::models::Sequential seq{std::make_shared<L::Linear>(10), F::sigmoid,
//                                  std::make_shared<L::Linear>(1)};
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "dezero/functions.hpp"
#include "dezero/layers.hpp"

namespace dezero {

// --- Model ---------------------------------------------------------------------------------------
class Model : public L::Layer {
 public:
  // Runs forward on the inputs and writes the graph of the output with
  // utils::plot_dot_graph(y, verbose = true, to_file); returns the path written.
  std::string plot(const Variable& x, const std::string& to_file = "model.png");
  std::string plot(const VariableList& xs, const std::string& to_file = "model.png");
};

namespace models {

using Activation = std::function<Variable(const Variable&)>;

// --- Sequential ----------------------------------------------------------------------------------
// Applies its items in order. A Layer item is registered as "l<i>" (i = its position,
// so the weight keys match DeZero's); a plain callable (F::relu, a lambda) is not a
// layer and has no parameters.
class Sequential : public Model {
 public:
  class Item {
   public:
    template <class T, std::enable_if_t<std::is_base_of_v<L::Layer, T>, int> = 0>
    Item(std::shared_ptr<T> layer) : layer_(std::move(layer)) {}  // NOLINT implicit
    template <class Fn, std::enable_if_t<std::is_invocable_r_v<Variable, Fn&, const Variable&> &&
                                             !std::is_same_v<std::decay_t<Fn>, Item>, int> = 0>
    Item(Fn&& fn) : fn_(std::forward<Fn>(fn)) {}  // NOLINT implicit

   private:
    friend class Sequential;
    std::shared_ptr<L::Layer> layer_;
    Activation fn_;
  };

  Sequential() = default;
  Sequential(std::initializer_list<Item> items);
  void append(const Item& item);
  Variable forward(const Variable& x) override;
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<Item> items_;
};

// --- MLP (step 45) -------------------------------------------------------------------------------
// One Linear(out) per size (l0, l1, ...); `activation` after every one but the last.
// The weights are drawn from `gen` (dezero::random's global stream by default).
class MLP : public Model {
 public:
  explicit MLP(const std::vector<std::int64_t>& fc_output_sizes, Activation activation = F::sigmoid,
               random::Generator gen = random::Generator::global());
  Variable forward(const Variable& x) override;

  std::vector<L::LayerRef<L::Linear>> layers;
  Activation activation;
};

}  // namespace models
}  // namespace dezero
