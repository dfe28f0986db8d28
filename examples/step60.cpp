// examples/step60.cpp - Step 60: an LSTM (BetterRNN: L::LSTM + Linear) on the sine wave,
// fed by SeqDataLoader: 30 parallel streams through the series, one step of each
// per batch; truncated BPTT every 30 batches as in step 59.
//
// The DeZero Python it mirrors (steps/step60.py):
//   max_epoch = 100
//   batch_size = 30
//   hidden_size = 100
//   bptt_length = 30
//
//   train_set = dezero.datasets.SinCurve(train=True)
//   dataloader = SeqDataLoader(train_set, batch_size=batch_size)
//   seqlen = len(train_set)
//
//   class BetterRNN(Model):
//       def __init__(self, hidden_size, out_size):
//           super().__init__()
//           self.rnn = L.LSTM(hidden_size)
//           self.fc = L.Linear(out_size)
//
//       def reset_state(self):
//           self.rnn.reset_state()
//
//       def forward(self, x):
//           y = self.rnn(x)
//           y = self.fc(y)
//           return y
//
//   model = BetterRNN(hidden_size, 1)
//   optimizer = dezero.optimizers.Adam().setup(model)
//
//   for epoch in range(max_epoch):
//       model.reset_state()
//       loss, count = 0, 0
//
//       for x, t in dataloader:
//           y = model(x)
//           loss += F.mean_squared_error(y, t)
//           count += 1
//
//           if count % bptt_length == 0 or count == seqlen:
//               model.cleargrads()
//               loss.backward()
//               loss.unchain_backward()
//               optimizer.update()
//       avg_loss = float(loss.data) / count
//       print('| epoch %d | loss %f' % (epoch + 1, avg_loss))
//
//   # Plot
//   xs = np.cos(np.linspace(0, 4 * np.pi, 1000))
//   model.reset_state()
//   pred_list = []
//   with dezero.no_grad():
//       for x in xs:
//           x = np.array(x).reshape(1, 1)
//           y = model(x)
//           pred_list.append(float(y.data))
//   # (plots xs and pred_list)
//
// As in DeZero, an epoch is 34 batches, so `count == seqlen` (999) never holds and
// the last 4 batches of each epoch are not back-propagated.
// step60.py does not seed; this program seeds with 0 so that runs repeat.
// `--epochs N` trains for N epochs. The cos-wave prediction goes to step60.csv.
// The program ends with "loss fell by <r>x" and "loss fell >= 10x: yes" and exits
// with 1 when the last epoch's loss is not at least 10 times below the first's.
#include <dezero/dezero.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "common/example_util.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
namespace L = dezero::L;
using dezero::Tensor;
using dezero::Variable;

class BetterRNN : public dezero::Model {
 public:
  BetterRNN(std::int64_t hidden_size, std::int64_t out_size) {
    rnn = register_layer("rnn", std::make_shared<L::LSTM>(hidden_size));
    fc = register_layer("fc", std::make_shared<L::Linear>(out_size));
  }
  void reset_state() { rnn->reset_state(); }
  Variable forward(const Variable& x) override {
    Variable y = rnn(x);
    y = fc(y);
    return y;
  }
  L::LayerRef<L::LSTM> rnn;
  L::LayerRef<L::Linear> fc;
};

int main(int argc, char** argv) try {
  int max_epoch = example::int_arg(argc, argv, "--epochs", 100);
  const std::int64_t batch_size = 30;
  const std::int64_t hidden_size = 100;
  const int bptt_length = 30;

  dezero::random::seed(0);
  dezero::datasets::SinCurve train_set(/*train=*/true);
  dezero::SeqDataLoader dataloader(train_set, batch_size);
  const std::int64_t seqlen = train_set.size();

  BetterRNN model(hidden_size, 1);
  auto optimizer = dezero::optimizers::Adam().setup(model);  // DeZero's one line

  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    model.reset_state();
    Variable loss;
    int count = 0;

    for (auto& [x, t] : dataloader) {
      Variable y = model(x);
      Variable l = F::mean_squared_error(y, t);
      loss = loss.defined() ? loss + l : l;
      count += 1;

      if (count % bptt_length == 0 || count == seqlen) {
        model.cleargrads();
        loss.backward();
        loss.unchain_backward();
        optimizer.update();
      }
    }

    double avg_loss = loss.data().item<double>() / count;
    std::printf("| epoch %d | loss %f\n", epoch + 1, avg_loss);
    if (epoch == 0) first_loss = avg_loss;
    last_loss = avg_loss;
  }

  // Predict a cos wave (one step ahead) with the trained model: reset_state(), then
  // model(x) for each x under no_grad() (example_util.hpp), written to step60.csv.
  example::write_cos_prediction(model, "step60.csv");
  return example::report_loss_fall(first_loss, last_loss);
} catch (const std::exception& e) {
  return example::report_error("step60", e);
}
