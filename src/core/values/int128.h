// 128-bit integers for exact intermediate arithmetic (quantities, safety factors). GCC and
// Clang provide them; __extension__ keeps -Wpedantic quiet about the non-ISO type.
#pragma once

namespace shmguard {
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;
}  // namespace shmguard
