// gpu/lib/hopper/tile_scheduler.cuh — which output tiles a CTA computes, and
// in what order: one tile per CTA (a grid of all tiles) or a PERSISTENT grid
// of one CTA per SM looping over tiles.
//
// Contract: the tiles_m x tiles_n output tiles are numbered 0 .. tiles() − 1
// in GROUPED order (bands of group_m tile rows, column by column inside a
// band: gpu::grouped_tile), so the CTAs running at one time share rows of A
// and columns of B in L2. A persistent CTA b of a grid of G takes tiles
// b, b + G, b + 2G, ... — a static round robin, every tile exactly once
// (host-tested), no atomics. The plain loop it replaces:
//
//   for (tile = blockIdx.x; tile < tiles; tile += gridDim.x) compute(coord(tile));
//
// where a non-persistent grid runs that loop's body once (G = tiles).
//
// What persistence buys: the producer of a CTA starts loading its next tile
// while the consumers still store the last one (no drain and refill of the
// pipeline per tile, no launch of a new CTA), and the whole grid is one wave.
// What it costs: the schedule is static, so a machine shared with other work,
// or tiles of unequal cost, leave some CTAs idle at the end (a dynamic
// scheduler would take tiles from an atomic counter instead).
#pragma once

#include "gpu/lib/mma.cuh"  // TileCoord, grouped_tile, CONVLAB_HOST_DEVICE

namespace convlab::gpu::hopper {

struct TileScheduler {
  int tiles_m = 0, tiles_n = 0, group_m = 1;

  CONVLAB_HOST_DEVICE constexpr int tiles() const { return tiles_m * tiles_n; }
  CONVLAB_HOST_DEVICE constexpr TileCoord coord(int tile) const {
    return grouped_tile(tile, tiles_m, tiles_n, group_m);
  }
  // The persistent loop: a CTA's first tile is its block index, the next one a grid further.
  CONVLAB_HOST_DEVICE constexpr int first(int block) const { return block; }
  CONVLAB_HOST_DEVICE constexpr int next(int tile, int grid) const { return tile + grid; }
  CONVLAB_HOST_DEVICE constexpr bool valid(int tile) const { return tile < tiles(); }
};

}  // namespace convlab::gpu::hopper
