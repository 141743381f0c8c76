// The absorbed form that mla_decode computes against multi-head latent attention written out the
// long way (un-absorbed), for every q head h:
//   K_nope[t] = c[t] . W_UK[h]   (W_UK: kv_lora_rank x qk_nope_head_dim)
//   V[t]      = c[t] . W_UV[h]   (W_UV: kv_lora_rank x v_head_dim)
//   out[h]    = softmax_t(scale * (q_nope . K_nope[t] + q_rope . k_rope[t])) V
// The absorbed query is q_nope_absorbed = W_UK . q_nope, so the absorbed output o_latent
// (kv_lora_rank wide) times W_UV must equal out[h]. The batch gives q_nope_absorbed; the test
// picks random W_UK and W_UV and recovers a q_nope with W_UK . q_nope = q_nope_absorbed (the
// least-norm solution, which needs qk_nope_head_dim >= kv_lora_rank: the shapes here are wider
// than DeepSeek's 128 < 512 for that reason, and well conditioned), then computes both forms in
// double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/problem.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

Matrix random_matrix(int rows, int cols, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(double(rows)));
  Matrix m(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  for (auto& row : m)
    for (double& x : row) x = normal(rng);
  return m;
}

// Solves a x = b for a symmetric positive definite a (Cholesky).
std::vector<double> solve_spd(Matrix a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t j = 0; j < n; ++j) {
    for (size_t k = 0; k < j; ++k) a[j][j] -= a[j][k] * a[j][k];
    a[j][j] = std::sqrt(a[j][j]);
    for (size_t i = j + 1; i < n; ++i) {
      for (size_t k = 0; k < j; ++k) a[i][j] -= a[i][k] * a[j][k];
      a[i][j] /= a[j][j];
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = b
    for (size_t k = 0; k < i; ++k) b[i] -= a[i][k] * b[k];
    b[i] /= a[i][i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    for (size_t k = i + 1; k < n; ++k) b[i] -= a[k][i] * b[k];
    b[i] /= a[i][i];
  }
  return b;
}

// The least-norm q_nope with W_UK . q_nope = absorbed: W_UK^T (W_UK W_UK^T)^-1 absorbed.
std::vector<double> unabsorb(const Matrix& w_uk, const std::vector<double>& absorbed) {
  const size_t rank = w_uk.size(), nope = w_uk[0].size();
  Matrix gram(rank, std::vector<double>(rank, 0.0));
  for (size_t i = 0; i < rank; ++i)
    for (size_t j = 0; j < rank; ++j)
      for (size_t n = 0; n < nope; ++n) gram[i][j] += w_uk[i][n] * w_uk[j][n];
  const std::vector<double> y = solve_spd(gram, absorbed);
  std::vector<double> q_nope(nope, 0.0);
  for (size_t n = 0; n < nope; ++n)
    for (size_t r = 0; r < rank; ++r) q_nope[n] += w_uk[r][n] * y[r];
  return q_nope;
}

// Softmax-weighted sum of value rows, in double.
std::vector<double> attend(const std::vector<double>& logits, const Matrix& values) {
  double top = -INFINITY;
  for (double l : logits) top = std::max(top, l);
  double sum = 0;
  for (double l : logits) sum += std::exp(l - top);
  std::vector<double> out(values[0].size(), 0.0);
  for (size_t t = 0; t < logits.size(); ++t) {
    const double p = std::exp(logits[t] - top) / sum;
    for (size_t d = 0; d < out.size(); ++d) out[d] += p * values[t][d];
  }
  return out;
}

struct Forms {
  double largest = 0;                // of the un-absorbed outputs
  double absorbed_vs_long = 0;       // absorbed form in double, projected by W_UV, vs un-absorbed
  double reference_vs_long = 0;      // the CPU reference, projected by W_UV, vs un-absorbed
  double reference_vs_absorbed = 0;  // the CPU reference vs the absorbed form in double (latent)
  double without_rope_vs_absorbed = 0;  // the absorbed form without q_rope . k_rope, vs with it
  int rows = 0;
};

Forms compare_forms(const testing::LatentShape& shape, int v_head_dim) {
  const Batch batch = testing::latent_batch(shape);
  const ModelShape& m = batch.spec.model;
  const int rank = m.kv_lora_rank, rope = m.qk_rope_head_dim, nope = *m.qk_nope_head_dim;
  const Problem host = Problem::on_host(batch);
  const std::vector<float> reference = paged_attention_reference(host, 2);
  EXPECT_EQ(reference.size(), size_t(batch.total_q) * m.num_q_heads * rank);

  std::mt19937_64 rng(20261129);
  Forms f;
  const double scale = batch.softmax_scale;
  for (int h = 0; h < m.num_q_heads; ++h) {
    const Matrix w_uk = random_matrix(rank, nope, rng), w_uv = random_matrix(rank, v_head_dim, rng);
    for (int s = 0; s < batch.num_seqs; ++s) {
      const int64_t kv_len = batch.kv_lens[size_t(s)];
      // The cached latent rows as a kernel sees them, and their un-absorbed K_nope and V.
      const size_t keys = static_cast<size_t>(kv_len);
      Matrix c(keys), k_rope(keys), k_nope(keys), v(keys);
      for (int64_t t = 0; t < kv_len; ++t) {
        for (int d = 0; d < rank + rope; ++d) {
          const double x = stored_kv_value(batch, DataStream::key, s, t, 0, d);
          (d < rank ? c : k_rope)[size_t(t)].push_back(x);
        }
        k_nope[size_t(t)].assign(size_t(nope), 0.0);
        v[size_t(t)].assign(size_t(v_head_dim), 0.0);
        for (int r = 0; r < rank; ++r) {
          for (int n = 0; n < nope; ++n)
            k_nope[size_t(t)][size_t(n)] += c[size_t(t)][size_t(r)] * w_uk[size_t(r)][size_t(n)];
          for (int e = 0; e < v_head_dim; ++e)
            v[size_t(t)][size_t(e)] += c[size_t(t)][size_t(r)] * w_uv[size_t(r)][size_t(e)];
        }
      }
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        const int64_t token = batch.cu_seqlens_q[size_t(s)] + i;
        std::vector<double> q_absorbed, q_rope;
        for (int d = 0; d < rank + rope; ++d) {
          const double x = round_to(batch.dtype, query_value(batch, token, h, d));
          (d < rank ? q_absorbed : q_rope).push_back(x);
        }
        const std::vector<double> q_nope = unabsorb(w_uk, q_absorbed);
        const int64_t visible = batch.causal ? batch.context_lens[size_t(s)] + i + 1 : kv_len;
        std::vector<double> long_logits, absorbed_logits, no_rope_logits;
        for (int64_t t = 0; t < visible; ++t) {
          double nope_dot = 0, absorbed_dot = 0, rope_dot = 0;
          for (int n = 0; n < nope; ++n)
            nope_dot += q_nope[size_t(n)] * k_nope[size_t(t)][size_t(n)];
          for (int r = 0; r < rank; ++r)
            absorbed_dot += q_absorbed[size_t(r)] * c[size_t(t)][size_t(r)];
          for (int d = 0; d < rope; ++d)
            rope_dot += q_rope[size_t(d)] * k_rope[size_t(t)][size_t(d)];
          long_logits.push_back(scale * (nope_dot + rope_dot));
          absorbed_logits.push_back(scale * (absorbed_dot + rope_dot));
          no_rope_logits.push_back(scale * absorbed_dot);
        }
        const Matrix visible_v(v.begin(), v.begin() + visible);
        const Matrix visible_c(c.begin(), c.begin() + visible);
        const std::vector<double> out_long = attend(long_logits, visible_v);
        const std::vector<double> o_latent = attend(absorbed_logits, visible_c);
        const std::vector<double> o_no_rope = attend(no_rope_logits, visible_c);
        const float* ref = reference.data() + (size_t(token) * m.num_q_heads + size_t(h)) * rank;
        for (int r = 0; r < rank; ++r) {
          f.reference_vs_absorbed =
              std::max(f.reference_vs_absorbed, std::fabs(double(ref[r]) - o_latent[size_t(r)]));
          f.without_rope_vs_absorbed = std::max(
              f.without_rope_vs_absorbed, std::fabs(o_no_rope[size_t(r)] - o_latent[size_t(r)]));
        }
        for (int e = 0; e < v_head_dim; ++e) {
          double absorbed = 0, from_reference = 0;
          for (int r = 0; r < rank; ++r) {
            absorbed += o_latent[size_t(r)] * w_uv[size_t(r)][size_t(e)];
            from_reference += double(ref[r]) * w_uv[size_t(r)][size_t(e)];
          }
          const double truth = out_long[size_t(e)];
          f.largest = std::max(f.largest, std::fabs(truth));
          f.absorbed_vs_long = std::max(f.absorbed_vs_long, std::fabs(absorbed - truth));
          f.reference_vs_long = std::max(f.reference_vs_long, std::fabs(from_reference - truth));
        }
        ++f.rows;
      }
    }
  }
  return f;
}

void expect_forms_agree(const Forms& f) {
  EXPECT_GT(f.rows, 0);
  EXPECT_GT(f.largest, 0.05);  // the outputs are not all zero
  // Both forms in double: the same numbers in another order.
  EXPECT_LT(f.absorbed_vs_long, 1e-9 * std::max(1.0, f.largest));
  // The reference accumulates in double and returns floats: a float's rounding, no more.
  EXPECT_LT(f.reference_vs_absorbed, 1e-6);
  EXPECT_LT(f.reference_vs_long, 1e-5 * std::max(1.0, f.largest));
  // The rotary part moves the answer far beyond these tolerances: a kernel that dropped it, or
  // read it from the wrong columns, would fail the comparison.
  EXPECT_GT(f.without_rope_vs_absorbed, 1e-3);
}

TEST(MlaAbsorbedForm, EqualsUnabsorbedAttentionWithSpeculativeTokens) {
  testing::LatentShape shape;  // rank 64, rope 16, nope 128, 1 to 4 query tokens
  expect_forms_agree(compare_forms(shape, 48));
}

TEST(MlaAbsorbedForm, EqualsUnabsorbedAttentionWithAWiderNopeHeadAndOnePageTokens) {
  testing::LatentShape shape;
  shape.qk_nope_head_dim = 96;
  shape.qk_rope_head_dim = 32;
  shape.page_size = 1;
  shape.q_heads = 3;
  expect_forms_agree(compare_forms(shape, 80));
}

TEST(MlaAbsorbedForm, EqualsUnabsorbedAttentionOverAnFp8LatentCache) {
  testing::LatentShape shape;
  shape.kv_dtype = "fp8_e4m3";
  shape.page_size = 64;
  expect_forms_agree(compare_forms(shape, 32));
}

TEST(MlaAbsorbedForm, EqualsUnabsorbedAttentionWithoutTheCausalMask) {
  testing::LatentShape shape;
  shape.causal = false;
  expect_forms_agree(compare_forms(shape, 48));
}

}  // namespace
}  // namespace attn
