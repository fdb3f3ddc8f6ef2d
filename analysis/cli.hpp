// analysis/cli.hpp — the `convlab waterline` subcommand, declared here so that
// app/main.cpp can list it in its command table without knowing analysis/.
//
//   convlab waterline NETWORK [--machine a5000|h100|h200|measured] [--probe FILE]
//                     [--batch 128] [--dtype fp16|bf16|fp32] [--block-fusion]
//                     [--latency-ms T] [--json]
//   convlab waterline NETWORK --sweep-opbyte [--opbyte-range LO:HI:N] [...]
//   convlab waterline --intensity-vs-channels [--channels LIST] [--group-width LIST]
//                     [--expansion E] [--batch N] [--dtype T] [--machine NAME] [--json]
//
// argv[0] is "waterline". The first form prints the per-kernel waterline
// table (or JSON) and the totals, and with --latency-ms the efficiency gap of
// that measured batch latency; --sweep-opbyte prints Figure 4's two curves
// for the network; --intensity-vs-channels prints Figure 2(e)'s series (the
// JSON of each: analysis/report.hpp). Returns 0 on success, 2 on a usage
// error (unknown network, machine, dtype or option, an option of another
// form, a malformed list: one line `convlab: error: ...` on stderr naming the
// valid choices), 1 when a file it needs (the probe JSON) cannot be read.
// app/cmd_waterline.cpp also defines `convlab::app::waterline_command`, the
// same command in the form of app/commands.hpp's table.
#pragma once

namespace convlab {

int cmd_waterline(int argc, char** argv);

}  // namespace convlab
