// flash's two products for a tile of query rows on AMX's bf16 tiles (the amx level of
// runtime/cpu_features.h), for a call whose operands may be rounded to bf16
// (Call::bf16_products: a model stored in bf16): S = Q K^T, and O (=|+=) P V. Where query_tile.h's
// f32 kernels read K and V as they lie, these read them packed once per call as tiles
// (amx_pack_keys, amx_pack_values), and the query rows and the softmax weights P rounded to bf16
// (amx_round_rows). query_tile_amx.cpp says how, the precision and what it gained.
#pragma once

#include <cstdint>

namespace attnscope::ops::attention::cpu {

// Whether the kernels below serve rows of `head_dim` values on this cpu: the amx level, and
// head_dim a multiple of 32 up to kAmxMaxHeadDim.
constexpr std::int64_t kAmxMaxHeadDim = 256;
bool amx_tile_products_apply(std::int64_t head_dim);

// Keys and values are packed in groups of this many rows, zeros past the last; a key range
// handed to the products starts at a multiple of it.
constexpr std::int64_t kAmxKeyGroup = 32;

// bf16 elements that one kv head's `keys` keys (or values) take packed: keys rounded up to
// kAmxKeyGroup, times head_dim.
std::int64_t amx_packed_elements(std::int64_t keys, std::int64_t head_dim);

// k [keys, head_dim] f32 (rows head_dim apart) rounded to bf16, as the B tiles of Q K^T.
void amx_pack_keys(const float* k, std::int64_t keys, std::int64_t head_dim, std::uint16_t* packed);
// v [keys, head_dim] f32 (rows head_dim apart) rounded to bf16, as the B tiles of P V.
void amx_pack_values(const float* v, std::int64_t keys, std::int64_t head_dim,
                     std::uint16_t* packed);

// out [rows', cols'] bf16 = x [rows, cols] f32 (row r at x + r stride) rounded, zeros past rows
// and cols, rows' and cols' being rows and cols rounded up to 32: amx_rounded_elements(rows, cols)
// of them. The A tiles of either product: Q, or P.
void amx_round_rows(const float* x, std::int64_t stride, std::int64_t rows, std::int64_t cols,
                    std::uint16_t* out);
std::int64_t amx_rounded_elements(std::int64_t rows, std::int64_t cols);
// The same row by row (P's rows, each as the softmax leaves it, while it is in L1): row r of out
// = the first `valid` floats of x rounded, zeros after them up to cols' (x not read when valid
// is 0); amx_zero_padding then writes rows [rows, rows') as amx_round_rows does.
void amx_round_row(const float* x, std::int64_t valid, std::int64_t cols, std::int64_t r,
                   std::uint16_t* out);
void amx_zero_padding(std::int64_t rows, std::int64_t cols, std::uint16_t* out);

// s[r * ld_s + j] = q_r . k_(first_key + j) for r < rows, j < keys: q the rows rounded
// (amx_round_rows, head_dim columns), `packed_keys` the kv head's (amx_pack_keys), first_key a
// multiple of kAmxKeyGroup.
void amx_tile_scores(const std::uint16_t* q, std::int64_t rows, const std::uint16_t* packed_keys,
                     std::int64_t first_key, std::int64_t keys, std::int64_t head_dim, float* s,
                     std::int64_t ld_s);

// o_r (=|+=) sum_j p_rj v_(first_key + j) for r < rows, j < keys (o's rows head_dim apart; = with
// `overwrite`): p rounded (amx_round_rows, `keys` columns), `packed_values` the kv head's
// (amx_pack_values), first_key a multiple of kAmxKeyGroup.
void amx_tile_values(const std::uint16_t* p, std::int64_t rows, const std::uint16_t* packed_values,
                     std::int64_t first_key, std::int64_t keys, std::int64_t head_dim, float* o,
                     bool overwrite);

}  // namespace attnscope::ops::attention::cpu
