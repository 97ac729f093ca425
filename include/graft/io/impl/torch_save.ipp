#pragma once
// Definitions for graft/io/torch_save.hpp (compiled once in compiled mode; see graft/config.hpp).
//
// Three parts: a zip reader and writer (stored entries only, CRC-32 checked, the central
// directory trusted only after its offsets and sizes were checked against the file), a pickle
// machine that builds values in an arena (no recursion while reading, memo indices and stack
// depths checked, no code run: globals come from an allow-list), and the conversion of the
// arena into torch_value trees (recursion bounded by max_torch_nesting).
#include "graft/io/torch_save.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "graft/core/factories.hpp"
#include "graft/core/shape.hpp"

namespace graft::io {

struct torch_value::data {
    kind k = kind::none;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<torch_value> elements;                         // tuple, list
    std::vector<std::pair<torch_value, torch_value>> items;    // dict
    std::map<std::string, std::size_t, std::less<>> str_keys;  // dict: str key -> index in items
    Tensor t;
};

namespace detail {

using graft::detail::concat;
using graft::detail::fail;

// ---------------------------------------------------------------------------------------------
// CRC-32 (ISO-HDLC, the zip checksum).

inline constexpr std::array<std::uint32_t, 256> crc32_table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
        std::uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[n] = c;
    }
    return t;
}();

[[nodiscard]] inline std::uint32_t crc32(const std::byte* p, std::size_t n, std::uint32_t crc = 0) noexcept {
    crc = ~crc;
    for (std::size_t i = 0; i < n; ++i) crc = crc32_table[(crc ^ static_cast<std::uint8_t>(p[i])) & 0xff] ^ (crc >> 8);
    return ~crc;
}

[[nodiscard]] inline std::uint64_t get_le(const std::byte* p, int n) noexcept {
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint64_t>(p[k]);
    return v;
}

// ---------------------------------------------------------------------------------------------
// Zip reading.

/// The bytes of the archive: a buffer or an open file.
struct zip_source {
    std::span<const std::byte> bytes;
    std::shared_ptr<file_handle> file;
    std::uint64_t size = 0;

    void read(std::uint64_t offset, void* dst, std::size_t n, const std::string& where) const {
        if (offset > size || n > size - offset)
            fail(concat(where, ": read of ", n, " bytes at byte ", offset, " is past the end of the file (", size,
                        " bytes)"));
        if (n == 0) return;
        if (file) file->read(offset, dst, n, where);
        else std::memcpy(dst, bytes.data() + offset, n);
    }
};

struct zip_entry {
    std::string name;
    std::uint32_t crc = 0;
    std::uint64_t size = 0;
    std::uint64_t data_offset = 0;  // of the entry's bytes, after the local header
};

struct zip_archive {
    std::map<std::string, zip_entry, std::less<>> entries;
    std::string first_name;  // the first entry of the central directory (torch's archive name)
};

/// Reads and checks the central directory. The end record is searched for from the end (a
/// zip comment may follow it); a Zip64 end record is used when its locator is present.
/// Every entry must be stored (method 0), unencrypted, with equal compressed and uncompressed
/// sizes, and its local header and data must lie before the central directory.
[[nodiscard]] inline zip_archive read_zip(const zip_source& src, const std::string& where) {
    constexpr std::uint64_t eocd_size = 22;
    if (src.size < eocd_size) {
        fail(concat(where, ": ", src.size, " bytes is too short for a torch.save file (a zip archive)"));
    }
    const std::uint64_t tail_len = std::min<std::uint64_t>(src.size, eocd_size + 0xffff);
    std::vector<std::byte> tail(static_cast<std::size_t>(tail_len));
    src.read(src.size - tail_len, tail.data(), tail.size(), where);
    std::optional<std::uint64_t> eocd_at;  // offset in the file
    for (std::uint64_t k = tail_len - eocd_size + 1; k-- > 0;) {
        const std::byte* p = tail.data() + k;
        if (get_le(p, 4) == 0x06054b50 && get_le(p + 20, 2) == tail_len - k - eocd_size) {
            eocd_at = src.size - tail_len + k;
            break;
        }
    }
    if (!eocd_at) {
        std::byte head[2]{};
        src.read(0, head, 2, where);
        if (head[0] == std::byte{0x80} && static_cast<std::uint8_t>(head[1]) <= 5)
            fail(concat(where, ": this is the legacy torch.save format (PyTorch < 1.6, or "
                               "_use_new_zipfile_serialization=False), which graft does not read: save it again "
                               "with a newer PyTorch"));
        fail(concat(where, ": not a zip archive (no end of central directory record): not a torch.save file, or "
                           "truncated"));
    }
    const std::byte* e = tail.data() + (*eocd_at - (src.size - tail_len));
    std::uint64_t disk = get_le(e + 4, 2), cd_disk = get_le(e + 6, 2);
    std::uint64_t count_disk = get_le(e + 8, 2), count = get_le(e + 10, 2);
    std::uint64_t cd_size = get_le(e + 12, 4), cd_offset = get_le(e + 16, 4);
    std::uint64_t cd_end_limit = *eocd_at;  // the central directory ends before the end records
    if (*eocd_at >= 20) {
        std::byte loc[20];
        src.read(*eocd_at - 20, loc, 20, where);
        if (get_le(loc, 4) == 0x07064b50) {  // Zip64 end of central directory locator
            const std::uint64_t z_at = get_le(loc + 8, 8);
            if (get_le(loc + 4, 4) != 0 || get_le(loc + 16, 4) > 1)
                fail(concat(where, ": multi-disk zip archives are not supported"));
            if (z_at > *eocd_at - 20 || *eocd_at - 20 - z_at < 56)
                fail(concat(where, ": the Zip64 end record offset ", z_at, " is out of bounds"));
            std::byte z[56];
            src.read(z_at, z, 56, where);
            if (get_le(z, 4) != 0x06064b50)
                fail(concat(where, ": no Zip64 end of central directory record at byte ", z_at));
            disk = get_le(z + 16, 4);
            cd_disk = get_le(z + 20, 4);
            count_disk = get_le(z + 24, 8);
            count = get_le(z + 32, 8);
            cd_size = get_le(z + 40, 8);
            cd_offset = get_le(z + 48, 8);
            cd_end_limit = z_at;
        }
    }
    if (disk != 0 || cd_disk != 0 || count_disk != count)
        fail(concat(where, ": multi-disk zip archives are not supported"));
    if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset)
        fail(concat(where, ": the central directory (", cd_size, " bytes at byte ", cd_offset,
                    ") lies outside the file: truncated, or the end record lies"));
    constexpr std::uint64_t cd_entry_min = 46;
    if (count > cd_size / cd_entry_min)
        fail(concat(where, ": the end record counts ", count, " entries but the central directory has only ",
                    cd_size, " bytes (", cd_entry_min, " at least per entry)"));
    std::vector<std::byte> cd(static_cast<std::size_t>(cd_size));
    src.read(cd_offset, cd.data(), cd.size(), where);

    zip_archive z;
    std::size_t pos = 0;
    for (std::uint64_t n = 0; n < count; ++n) {
        if (cd.size() - pos < cd_entry_min || get_le(cd.data() + pos, 4) != 0x02014b50)
            fail(concat(where, ": central directory entry ", n, " (at byte ", cd_offset + pos, ") is malformed"));
        const std::byte* c = cd.data() + pos;
        const std::uint64_t flags = get_le(c + 8, 2), method = get_le(c + 10, 2);
        const auto crc = static_cast<std::uint32_t>(get_le(c + 16, 4));
        std::uint64_t csize = get_le(c + 20, 4), usize = get_le(c + 24, 4);
        const std::size_t name_len = get_le(c + 28, 2), extra_len = get_le(c + 30, 2), comment_len = get_le(c + 32, 2);
        std::uint64_t entry_disk = get_le(c + 34, 2), local = get_le(c + 42, 4);
        if (cd.size() - pos - cd_entry_min < name_len + extra_len + comment_len)
            fail(concat(where, ": central directory entry ", n, " runs past the central directory"));
        zip_entry ent;
        ent.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
        // Zip64 extended information: the 8-byte values of the fields saturated above, in order.
        const std::byte* x = c + 46 + name_len;
        for (std::size_t k = 0; k + 4 <= extra_len;) {
            const std::uint64_t id = get_le(x + k, 2), len = get_le(x + k + 2, 2);
            if (len > extra_len - k - 4)
                fail(concat(where, ": entry ", show(ent.name), " has a malformed extra field"));
            if (id == 0x0001) {
                std::size_t q = k + 4;
                auto take = [&](std::uint64_t& field, int bytes) {
                    if (q + static_cast<std::size_t>(bytes) > k + 4 + len)
                        fail(concat(where, ": entry ", show(ent.name), " has a short Zip64 extra field"));
                    field = get_le(x + q, bytes);
                    q += static_cast<std::size_t>(bytes);
                };
                if (usize == 0xffffffff) take(usize, 8);
                if (csize == 0xffffffff) take(csize, 8);
                if (local == 0xffffffff) take(local, 8);
                if (entry_disk == 0xffff) take(entry_disk, 4);
            }
            k += 4 + static_cast<std::size_t>(len);
        }
        pos += cd_entry_min + name_len + extra_len + comment_len;
        if (flags & 1) fail(concat(where, ": entry ", show(ent.name), " is encrypted"));
        if (method != 0)
            fail(concat(where, ": entry ", show(ent.name), " is compressed (method ", method,
                        "); torch.save stores entries uncompressed, graft reads only stored entries"));
        if (csize != usize)
            fail(concat(where, ": stored entry ", show(ent.name), " has compressed size ", csize,
                        " but uncompressed size ", usize));
        if (entry_disk != 0) fail(concat(where, ": multi-disk zip archives are not supported"));
        // The local header: its signature and name are checked, its sizes ignored (torch's writer
        // leaves them 0 and puts a data descriptor after the data).
        if (local > cd_offset || cd_offset - local < 30)
            fail(concat(where, ": entry ", show(ent.name), " has its local header at byte ", local,
                        ", outside the entries' area (", cd_offset, " bytes)"));
        std::byte lh[30];
        src.read(local, lh, 30, where);
        if (get_le(lh, 4) != 0x04034b50)
            fail(concat(where, ": entry ", show(ent.name), ": no local header at byte ", local));
        const std::uint64_t lname = get_le(lh + 26, 2), lextra = get_le(lh + 28, 2);
        const std::uint64_t data_at = local + 30 + lname + lextra;
        if (data_at > cd_offset || usize > cd_offset - data_at)
            fail(concat(where, ": entry ", show(ent.name), " (", usize, " bytes at byte ", data_at,
                        ") runs past the entries' area (", cd_offset, " bytes): truncated, or its size lies"));
        if (lname != name_len)
            fail(concat(where, ": entry ", show(ent.name), ": the local header names another entry"));
        std::string local_name(name_len, '\0');
        src.read(local + 30, local_name.data(), name_len, where);
        if (local_name != ent.name)
            fail(concat(where, ": entry ", show(ent.name), ": the local header names another entry (",
                        show(local_name), ")"));
        ent.crc = crc;
        ent.size = usize;
        ent.data_offset = data_at;
        if (n == 0) z.first_name = ent.name;
        const std::string key = ent.name;
        if (!z.entries.emplace(key, std::move(ent)).second)
            fail(concat(where, ": two zip entries are named ", show(key)));
    }
    return z;
}

/// Reads an entry's bytes into `dst` (entry.size bytes) and checks its CRC-32.
inline void read_entry(const zip_source& src, const zip_entry& ent, std::byte* dst, const std::string& where) {
    src.read(ent.data_offset, dst, static_cast<std::size_t>(ent.size), where);
    const std::uint32_t crc = crc32(dst, static_cast<std::size_t>(ent.size));
    if (crc != ent.crc)
        fail(concat(where, ": entry ", show(ent.name), " fails its CRC-32 check (computed ", crc, ", the archive says ",
                    ent.crc, "): the file is corrupt"));
}

// ---------------------------------------------------------------------------------------------
// The pickle machine.

/// A value on the machine's stack or in its memo; owned by the machine's arena.
struct pnode {
    enum class kind : std::uint8_t {
        none, boolean, integer, floating, string, tuple, list, dict, tensor, global, storage
    };
    kind k = kind::none;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::string s;  // string; global: "module.name"
    std::vector<pnode*> items;  // tuple, list
    std::vector<std::pair<pnode*, pnode*>> entries;  // dict
    std::map<std::string, std::size_t> index;  // dict: canonical key -> position in entries
    Tensor t;  // tensor; storage: the 1-d tensor over the storage
};

[[nodiscard]] inline std::string_view pnode_kind_name(pnode::kind k) noexcept {
    switch (k) {
        case pnode::kind::none: return "None";
        case pnode::kind::boolean: return "bool";
        case pnode::kind::integer: return "int";
        case pnode::kind::floating: return "float";
        case pnode::kind::string: return "str";
        case pnode::kind::tuple: return "tuple";
        case pnode::kind::list: return "list";
        case pnode::kind::dict: return "dict";
        case pnode::kind::tensor: return "Tensor";
        case pnode::kind::global: return "global";
        case pnode::kind::storage: return "storage";
    }
    return "?";
}

/// The storage classes of the allow-list and the dtypes they hold.
struct storage_class {
    std::string_view name;
    dtype type;
};
inline constexpr storage_class storage_classes[] = {
    {"torch.FloatStorage", dtype::float32}, {"torch.DoubleStorage", dtype::float64},
    {"torch.HalfStorage", dtype::float16},  {"torch.BFloat16Storage", dtype::bfloat16},
    {"torch.LongStorage", dtype::int64},    {"torch.IntStorage", dtype::int32},
    {"torch.BoolStorage", dtype::bool_},
};

[[nodiscard]] inline const storage_class* find_storage_class(std::string_view name) noexcept {
    for (const storage_class& c : storage_classes)
        if (c.name == name) return &c;
    return nullptr;
}

[[nodiscard]] inline const storage_class& storage_class_of(dtype t) {
    for (const storage_class& c : storage_classes)
        if (c.type == t) return c;
    fail(concat("io::save_torch: dtype ", name(t), " has no torch storage class"));
}

inline constexpr std::string_view allowed_globals_text =
    "collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, torch.FloatStorage, "
    "torch.DoubleStorage, torch.HalfStorage, torch.BFloat16Storage, torch.LongStorage, torch.IntStorage, "
    "torch.BoolStorage";

/// Runs the pickle `p` (the archive's data.pkl) and returns the object it builds. Storages
/// named by persistent ids are read from the archive on first use.
class unpickler {
public:
    unpickler(std::span<const std::byte> p, const zip_source& src, const zip_archive& zip, std::string archive,
              const std::string& where)
        : p_(p), src_(src), zip_(zip), archive_(std::move(archive)), where_(where) {}

    pnode* run() {
        for (;;) {
            const std::size_t at = pos_;
            const auto op = static_cast<std::uint8_t>(take(1, "an opcode")[0]);
            op_at_ = at;
            switch (op) {
                case 0x80: {  // PROTO
                    const auto v = static_cast<std::uint8_t>(take(1, "PROTO")[0]);
                    if (v < 2 || v > 5) error("unsupported pickle protocol ", static_cast<unsigned>(v));
                    break;
                }
                case 0x95: (void)take(8, "FRAME"); break;  // FRAME: a hint, framing is ignored
                case '.': {  // STOP
                    if (!marks_.empty()) error("STOP with an open MARK");
                    if (stack_.size() != 1) error("STOP with ", stack_.size(), " values on the stack (expected 1)");
                    if (pos_ != p_.size()) error(p_.size() - pos_, " bytes after STOP");
                    return stack_.back();
                }
                case '}': push(make(pnode::kind::dict)); break;   // EMPTY_DICT
                case ']': push(make(pnode::kind::list)); break;   // EMPTY_LIST
                case ')': push(make(pnode::kind::tuple)); break;  // EMPTY_TUPLE
                case '(': marks_.push_back(stack_.size()); break;  // MARK
                case '1': (void)pop_mark(); break;                 // POP_MARK
                case '0': (void)pop(); break;                      // POP
                case '2': {                                        // DUP
                    pnode* v = top();
                    push(v);
                    break;
                }
                case 't': case 'l': {  // TUPLE, LIST
                    const std::size_t m = pop_mark();
                    pnode* v = make(op == 't' ? pnode::kind::tuple : pnode::kind::list);
                    v->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
                    stack_.resize(m);
                    push(v);
                    break;
                }
                case 0x85: case 0x86: case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
                    const std::size_t n = op - 0x84u;
                    need_above_mark(n);
                    pnode* v = make(pnode::kind::tuple);
                    v->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
                    stack_.resize(stack_.size() - n);
                    push(v);
                    break;
                }
                case 'd': {  // DICT
                    const std::size_t m = pop_mark();
                    pnode* d = make(pnode::kind::dict);
                    set_items(d, m);
                    push(d);
                    break;
                }
                case 'a': {  // APPEND
                    need_above_mark(2);
                    pnode* v = pop();
                    append(top(), v);
                    break;
                }
                case 'e': {  // APPENDS
                    const std::size_t m = pop_mark();
                    if (m == 0 || (!marks_.empty() && m - 1 < marks_.back())) error("APPENDS without a list");
                    pnode* list = stack_[m - 1];
                    for (std::size_t k = m; k < stack_.size(); ++k) append(list, stack_[k]);
                    stack_.resize(m);
                    break;
                }
                case 's': {  // SETITEM
                    need_above_mark(3);
                    set_items(stack_[stack_.size() - 3], stack_.size() - 2);
                    break;
                }
                case 'u': {  // SETITEMS
                    const std::size_t m = pop_mark();
                    if (m == 0 || (!marks_.empty() && m - 1 < marks_.back())) error("SETITEMS without a dict");
                    set_items(stack_[m - 1], m);
                    break;
                }
                case 'X': push_string(le(4, "BINUNICODE")); break;
                case 0x8c: push_string(le(1, "SHORT_BINUNICODE")); break;
                case 0x8d: push_string(le(8, "BINUNICODE8")); break;
                case 'K': push_int(static_cast<std::int64_t>(le(1, "BININT1"))); break;
                case 'M': push_int(static_cast<std::int64_t>(le(2, "BININT2"))); break;
                case 'J': push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, "BININT")))); break;
                case 0x8a: push_long(le(1, "LONG1")); break;
                case 0x8b: push_long(le(4, "LONG4")); break;
                case 'G': {  // BINFLOAT: big-endian
                    const std::byte* b = take(8, "BINFLOAT");
                    std::uint64_t bits = 0;
                    for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<std::uint8_t>(b[k]);
                    pnode* v = make(pnode::kind::floating);
                    v->f = std::bit_cast<double>(bits);
                    push(v);
                    break;
                }
                case 'N': push(make(pnode::kind::none)); break;
                case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
                    pnode* v = make(pnode::kind::boolean);
                    v->b = op == 0x88;
                    push(v);
                    break;
                }
                case 'q': memo_put(le(1, "BINPUT")); break;
                case 'r': memo_put(le(4, "LONG_BINPUT")); break;
                case 0x94: memo_put(memo_.size()); break;  // MEMOIZE
                case 'h': push(memo_get(le(1, "BINGET"))); break;
                case 'j': push(memo_get(le(4, "LONG_BINGET"))); break;
                case 'c': {  // GLOBAL "module\nname\n"
                    std::string module = line("GLOBAL");
                    std::string name = line("GLOBAL");
                    push(global(module + "." + name));
                    break;
                }
                case 0x93: {  // STACK_GLOBAL
                    need_above_mark(2);
                    pnode* name = pop();
                    pnode* module = pop();
                    if (module->k != pnode::kind::string || name->k != pnode::kind::string)
                        error("STACK_GLOBAL needs two str");
                    push(global(module->s + "." + name->s));
                    break;
                }
                case 'R': {  // REDUCE
                    need_above_mark(2);
                    pnode* args = pop();
                    pnode* fn = pop();
                    push(reduce(fn, args));
                    break;
                }
                case 'b': {  // BUILD: the state of an OrderedDict (torch's _metadata) is ignored
                    need_above_mark(2);
                    (void)pop();
                    if (top()->k != pnode::kind::dict)
                        error("BUILD on a ", pnode_kind_name(top()->k), " (graft only sets the state of dicts)");
                    break;
                }
                case 'Q': {  // BINPERSID
                    need_above_mark(1);
                    push(persistent_load(pop()));
                    break;
                }
                default: {
                    const char c = static_cast<char>(op);
                    error("unsupported pickle opcode 0x", hex2(op),
                          (op >= 0x20 && op < 0x7f) ? concat(" ('", c, "')") : std::string{},
                          " (graft reads the opcodes torch.save writes, protocol 2)");
                }
            }
        }
    }

private:
    template <class... Parts>
    [[noreturn]] void error(const Parts&... what) const {
        fail(concat(where_, ": ", archive_, "/data.pkl: at byte ", op_at_, ": ", what...));
    }

    static std::string hex2(unsigned v) {
        static constexpr char hex[] = "0123456789abcdef";
        return {hex[(v >> 4) & 15], hex[v & 15]};
    }

    const std::byte* take(std::size_t n, const char* what) {
        if (p_.size() - pos_ < n) {
            op_at_ = pos_;
            error("the pickle ends inside ", what, " (", n, " bytes needed, ", p_.size() - pos_, " left)");
        }
        const std::byte* b = p_.data() + pos_;
        pos_ += n;
        return b;
    }
    std::uint64_t le(int n, const char* what) { return get_le(take(static_cast<std::size_t>(n), what), n); }

    std::string line(const char* what) {
        std::string s;
        for (;;) {
            const char c = static_cast<char>(take(1, what)[0]);
            if (c == '\n') return s;
            if (s.size() >= 256) error(what, " argument longer than 256 bytes");
            s += c;
        }
    }

    pnode* make(pnode::kind k) {
        pnode& n = arena_.emplace_back();
        n.k = k;
        return &n;
    }

    void push(pnode* v) { stack_.push_back(v); }
    [[nodiscard]] std::size_t above_mark() const noexcept {
        return stack_.size() - (marks_.empty() ? 0 : marks_.back());
    }
    void need_above_mark(std::size_t n) const {
        if (above_mark() < n) error("stack underflow (", n, " values needed, ", above_mark(), " there)");
    }
    pnode* pop() {
        need_above_mark(1);
        pnode* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    pnode* top() const {
        need_above_mark(1);
        return stack_.back();
    }
    std::size_t pop_mark() {
        if (marks_.empty()) error("no MARK to pop");
        const std::size_t m = marks_.back();
        marks_.pop_back();
        return m;
    }

    void push_int(std::int64_t i) {
        pnode* v = make(pnode::kind::integer);
        v->i = i;
        push(v);
    }
    void push_long(std::uint64_t n) {
        if (n > 8) error("integer of ", n, " bytes does not fit in 64 bits");
        const std::byte* b = take(static_cast<std::size_t>(n), "LONG");
        std::uint64_t u = 0;
        for (std::size_t k = n; k-- > 0;) u = (u << 8) | static_cast<std::uint8_t>(b[k]);
        if (n > 0 && n < 8 && (static_cast<std::uint8_t>(b[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);  // sign
        push_int(static_cast<std::int64_t>(u));
    }
    void push_string(std::uint64_t n) {
        if (n > p_.size() - pos_) error("a string of ", n, " bytes but only ", p_.size() - pos_, " left in the pickle");
        const std::byte* b = take(static_cast<std::size_t>(n), "a string");
        pnode* v = make(pnode::kind::string);
        v->s.assign(reinterpret_cast<const char*>(b), static_cast<std::size_t>(n));
        if (const std::size_t bad = invalid_utf8_at(v->s); bad != std::string_view::npos)
            error("a str that is not valid UTF-8 (at byte ", bad, " of it)");
        push(v);
    }

    void memo_put(std::uint64_t idx) { memo_[idx] = top(); }
    pnode* memo_get(std::uint64_t idx) const {
        const auto it = memo_.find(idx);
        if (it == memo_.end()) error("memo entry ", idx, " was never stored");
        return it->second;
    }

    pnode* global(const std::string& name) {
        if (name != "collections.OrderedDict" && name != "torch._utils._rebuild_tensor_v2" &&
            name != "torch._utils._rebuild_parameter" && find_storage_class(name) == nullptr) {
            if (name.starts_with("torch.") && name.ends_with("Storage") && name.find('.', 6) == std::string::npos)
                error("storage class ", show(name), " holds a dtype graft does not have (graft loads torch.FloatStorage, "
                      "DoubleStorage, HalfStorage, BFloat16Storage, LongStorage, IntStorage and BoolStorage)");
            error("forbidden global ", show(name), " (graft runs no code from a file: it allows only ",
                  allowed_globals_text, ")");
        }
        pnode* v = make(pnode::kind::global);
        v->s = name;
        return v;
    }

    void append(pnode* list, pnode* v) const {
        if (list->k != pnode::kind::list) error("APPEND(S) to a ", pnode_kind_name(list->k), ", not a list");
        list->items.push_back(v);
    }

    /// A dict key as text for finding duplicates: keys equal in Python are equal here.
    std::string canonical_key(const pnode* key) const {
        switch (key->k) {
            case pnode::kind::string: return "s" + key->s;
            case pnode::kind::integer: return concat("i", key->i);
            case pnode::kind::boolean: return concat("i", key->b ? 1 : 0);
            case pnode::kind::none: return "n";
            case pnode::kind::floating:
                if (key->f == std::trunc(key->f) && std::abs(key->f) < 9.0e18)
                    return concat("i", static_cast<std::int64_t>(key->f));
                return concat("f", std::bit_cast<std::uint64_t>(key->f));
            default: error("a dict key of type ", pnode_kind_name(key->k), " (graft reads str, int, bool, float and None keys)");
        }
    }

    /// d[k] = v for the pairs stack_[from..], which are removed.
    void set_items(pnode* d, std::size_t from) {
        if (d->k != pnode::kind::dict) error("SETITEM(S) on a ", pnode_kind_name(d->k), ", not a dict");
        if ((stack_.size() - from) % 2 != 0) error("SETITEMS with an odd number of values");
        for (std::size_t k = from; k < stack_.size(); k += 2) {
            std::string key = canonical_key(stack_[k]);
            const auto [it, added] = d->index.emplace(std::move(key), d->entries.size());
            if (added) d->entries.emplace_back(stack_[k], stack_[k + 1]);
            else d->entries[it->second].second = stack_[k + 1];
        }
        stack_.resize(from);
    }

    [[nodiscard]] std::int64_t int_arg(const pnode* v, const char* what) const {
        if (v->k != pnode::kind::integer) error(what, " must be an int, not ", pnode_kind_name(v->k));
        return v->i;
    }

    [[nodiscard]] int_list int_tuple(const pnode* v, const char* what) const {
        if (v->k != pnode::kind::tuple) error(what, " must be a tuple of ints, not ", pnode_kind_name(v->k));
        int_list out;
        for (const pnode* e : v->items) {
            const std::int64_t x = int_arg(e, what);
            if (x < 0) error(what, " holds ", x, " (must not be negative)");
            out.push_back(x);
        }
        return out;
    }

    pnode* reduce(pnode* fn, pnode* args) {
        if (fn->k != pnode::kind::global) error("REDUCE calls a ", pnode_kind_name(fn->k), ", not a global");
        if (args->k != pnode::kind::tuple) error("REDUCE with arguments that are a ", pnode_kind_name(args->k));
        const std::vector<pnode*>& a = args->items;
        if (fn->s == "collections.OrderedDict") {
            if (!a.empty()) error("collections.OrderedDict called with arguments (graft reads OrderedDict())");
            return make(pnode::kind::dict);
        }
        if (fn->s == "torch._utils._rebuild_parameter") {
            if (a.size() != 3) error("torch._utils._rebuild_parameter takes 3 arguments, not ", a.size());
            if (a[0]->k != pnode::kind::tensor) error("torch._utils._rebuild_parameter of a ", pnode_kind_name(a[0]->k));
            return a[0];  // a parameter loads as its tensor (io knows no autograd)
        }
        if (fn->s == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a);
        error("the global ", show(fn->s), " cannot be called (it only names a storage's dtype in a persistent id)");
    }

    /// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[,
    /// metadata]): a view of the storage, checked to lie inside it.
    pnode* rebuild_tensor(const std::vector<pnode*>& a) {
        if (a.size() != 6 && a.size() != 7)
            error("torch._utils._rebuild_tensor_v2 takes 6 or 7 arguments, not ", a.size());
        if (a[0]->k != pnode::kind::storage)
            error("torch._utils._rebuild_tensor_v2: the first argument must be a storage, not a ",
                  pnode_kind_name(a[0]->k));
        const Tensor& st = a[0]->t;
        const std::int64_t offset = int_arg(a[1], "the storage offset");
        int_list sizes = int_tuple(a[2], "the size");
        int_list strides = int_tuple(a[3], "the stride");
        if (a[4]->k != pnode::kind::boolean) error("requires_grad must be a bool, not ", pnode_kind_name(a[4]->k));
        if (sizes.size() != strides.size())
            error("a tensor with size ", sizes, " but stride ", strides, " (different lengths)");
        const std::int64_t storage_numel = st.numel();
        std::int64_t numel = 1;
        bool fits = true;
        for (std::int64_t s : sizes) fits = fits && graft::detail::mul_fits(numel, s, numel);
        if (!fits) error("a tensor of size ", sizes, ", whose element count overflows int64");
        if (offset < 0) error("a tensor with storage offset ", offset);
        std::int64_t last = offset;  // the last element's index in the storage
        if (numel > 0) {
            for (std::size_t d = 0; d < sizes.size(); ++d) {
                std::int64_t span = 0;
                if (!graft::detail::mul_fits(sizes[d] - 1, strides[d], span) || __builtin_add_overflow(last, span, &last))
                    error("a tensor of size ", sizes, " and stride ", strides, " whose extent overflows int64");
            }
        }
        if (numel > 0 ? last >= storage_numel : offset > storage_numel)
            error("a tensor of size ", sizes, ", stride ", strides, " and storage offset ", offset, " reaches element ",
                  last, " of storage ", show(a[0]->s), ", which holds ", storage_numel,
                  " elements: the storage is too small");
        pnode* v = make(pnode::kind::tensor);
        v->t = graft::detail::raw::view_of(st, std::move(sizes), std::move(strides), offset);
        return v;
    }

    /// ('storage', storage class, key, location, numel): the storage in <archive>/data/<key>,
    /// read once per key and shared by every tensor naming it.
    pnode* persistent_load(const pnode* pid) {
        if (pid->k != pnode::kind::tuple || pid->items.size() != 5 || pid->items[0]->k != pnode::kind::string ||
            pid->items[0]->s != "storage")
            error("a persistent id that is not ('storage', class, key, location, numel)");
        const pnode* cls = pid->items[1];
        const pnode* key = pid->items[2];
        if (cls->k != pnode::kind::global || find_storage_class(cls->s) == nullptr)
            error("a persistent id whose storage class is a ", pnode_kind_name(cls->k), ", not a torch.*Storage");
        if (key->k != pnode::kind::string) error("a persistent id whose key is a ", pnode_kind_name(key->k));
        if (pid->items[3]->k != pnode::kind::string) error("a persistent id whose location is not a str");
        const std::int64_t numel = int_arg(pid->items[4], "a storage's element count");
        const dtype type = find_storage_class(cls->s)->type;
        if (numel < 0) error("storage ", show(key->s), " has ", numel, " elements");
        const auto it = storages_.find(key->s);
        if (it != storages_.end()) {
            const Tensor& prev = it->second->t;
            if (prev.type() != type || prev.numel() != numel)
                error("storage ", show(key->s), " is named as ", cls->s, " of ", numel, " elements and before as ",
                      storage_class_of(prev.type()).name, " of ", prev.numel(), " elements");
            return it->second;
        }
        const std::string entry_name = archive_ + "/data/" + key->s;
        const auto e = zip_.entries.find(entry_name);
        if (e == zip_.entries.end()) error("storage ", show(key->s), " has no entry ", show(entry_name), " in the archive");
        std::uint64_t nbytes = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(numel), element_size(type), &nbytes) ||
            nbytes != e->second.size)
            error("storage ", show(key->s), " (", cls->s, ") declares ", numel, " elements but its entry ",
                  show(entry_name), " holds ", e->second.size, " bytes (", element_size(type), " per element)");
        pnode* v = make(pnode::kind::storage);
        v->s = key->s;
        v->t = empty({numel}, type);
        auto* dst = static_cast<std::byte*>(v->t.raw_data());
        read_entry(src_, e->second, dst, where_);
        if (type == dtype::bool_) {
            for (std::uint64_t k = 0; k < nbytes; ++k)
                if (static_cast<std::uint8_t>(dst[k]) > 1)
                    error("bool storage ", show(key->s), " holds byte ", static_cast<unsigned>(static_cast<std::uint8_t>(dst[k])),
                          " at element ", k, " (a bool is 0 or 1)");
        }
        if constexpr (std::endian::native == std::endian::big)
            swap_bytes(dst, static_cast<std::size_t>(nbytes), element_size(type));
        storages_.emplace(key->s, v);
        return v;
    }

    std::span<const std::byte> p_;
    const zip_source& src_;
    const zip_archive& zip_;
    std::string archive_;
    const std::string& where_;
    std::size_t pos_ = 0;
    std::size_t op_at_ = 0;
    std::deque<pnode> arena_;
    std::vector<pnode*> stack_;
    std::vector<std::size_t> marks_;
    std::unordered_map<std::uint64_t, pnode*> memo_;
    std::map<std::string, pnode*> storages_;
};

/// Converts the machine's values into torch_values: shared nodes stay shared, nesting is
/// bounded (which also refuses cycles), and the tree the values unfold to is bounded.
class value_builder {
public:
    explicit value_builder(const std::string& where) : where_(where) {}

    torch_value build(const pnode* n, int depth = 0) {
        if (depth > max_torch_nesting)
            fail(concat(where_, ": the object nests containers more than ", max_torch_nesting,
                        " deep (or holds a cycle)"));
        if (const auto it = done_.find(n); it != done_.end()) {
            add_unfolded(it->second.second);
            return torch_value(it->second.first);
        }
        auto d = std::make_shared<torch_value::data>();
        std::uint64_t before = unfolded_;
        add_unfolded(1);
        using K = torch_value::kind;
        switch (n->k) {
            case pnode::kind::none: d->k = K::none; break;
            case pnode::kind::boolean: d->k = K::boolean; d->b = n->b; break;
            case pnode::kind::integer: d->k = K::integer; d->i = n->i; break;
            case pnode::kind::floating: d->k = K::floating; d->f = n->f; break;
            case pnode::kind::string: d->k = K::string; d->s = n->s; break;
            case pnode::kind::tensor: d->k = K::tensor; d->t = n->t; break;
            case pnode::kind::tuple:
            case pnode::kind::list:
                d->k = n->k == pnode::kind::tuple ? K::tuple : K::list;
                d->elements.reserve(n->items.size());
                for (const pnode* e : n->items) d->elements.push_back(build(e, depth + 1));
                break;
            case pnode::kind::dict:
                d->k = K::dict;
                d->items.reserve(n->entries.size());
                for (const auto& [key, value] : n->entries) {
                    torch_value kv = build(key, depth + 1);
                    if (key->k == pnode::kind::string) d->str_keys.emplace(key->s, d->items.size());
                    d->items.emplace_back(std::move(kv), build(value, depth + 1));
                }
                break;
            case pnode::kind::global:
                fail(concat(where_, ": the object holds the global ", show(n->s), " outside a tensor"));
            case pnode::kind::storage:
                fail(concat(where_, ": the object holds storage ", show(n->s),
                            " outside a tensor (graft loads tensors, not bare storages)"));
        }
        done_.emplace(n, std::make_pair(std::shared_ptr<const torch_value::data>(d), unfolded_ - before));
        return torch_value(std::move(d));
    }

private:
    void add_unfolded(std::uint64_t n) {
        constexpr std::uint64_t limit = std::uint64_t{1} << 24;
        unfolded_ += n;
        if (unfolded_ > limit)
            fail(concat(where_, ": the object unfolds to more than ", limit,
                        " values (containers shared many times over)"));
    }

    const std::string& where_;
    std::unordered_map<const pnode*, std::pair<std::shared_ptr<const torch_value::data>, std::uint64_t>> done_;
    std::uint64_t unfolded_ = 0;
};

/// Reads a torch.save archive: finds <archive>/data.pkl, checks the version record, runs the
/// pickle and converts its object.
[[nodiscard]] inline torch_value load_torch_archive(const zip_source& src, const std::string& where) {
    return guarded(where, [&] {
        const zip_archive zip = read_zip(src, where);
        const std::size_t slash = zip.first_name.find('/');
        if (zip.entries.empty() || slash == std::string::npos)
            fail(concat(where, ": not a torch.save archive (its first entry, ", show(zip.first_name),
                        ", is not inside an archive folder)"));
        const std::string archive = zip.first_name.substr(0, slash);
        const auto pkl = zip.entries.find(archive + "/data.pkl");
        if (pkl == zip.entries.end()) {
            if (zip.entries.count(archive + "/constants.pkl") != 0)
                fail(concat(where, ": this is a TorchScript archive (torch.jit.save), not a torch.save file"));
            fail(concat(where, ": not a torch.save archive: no entry ", show(archive + "/data.pkl")));
        }
        const auto ver = zip.entries.find(archive + "/version");
        if (ver == zip.entries.end())
            fail(concat(where, ": not a torch.save archive: no entry ", show(archive + "/version")));
        if (ver->second.size > 32) fail(concat(where, ": the version record is ", ver->second.size, " bytes long"));
        std::string version(static_cast<std::size_t>(ver->second.size), '\0');
        read_entry(src, ver->second, reinterpret_cast<std::byte*>(version.data()), where);
        while (!version.empty() && (version.back() == '\n' || version.back() == '\r')) version.pop_back();
        if (version.empty() || version.find_first_not_of("0123456789") != std::string::npos)
            fail(concat(where, ": the version record holds ", show(version), ", not a number"));
        if (const auto bo = zip.entries.find(archive + "/byteorder"); bo != zip.entries.end()) {
            if (bo->second.size > 16) fail(concat(where, ": the byteorder record is ", bo->second.size, " bytes long"));
            std::string order(static_cast<std::size_t>(bo->second.size), '\0');
            read_entry(src, bo->second, reinterpret_cast<std::byte*>(order.data()), where);
            if (order != "little")
                fail(concat(where, ": the archive's byte order is ", show(order), "; graft reads \"little\""));
        }
        std::vector<std::byte> pickle(static_cast<std::size_t>(pkl->second.size));
        read_entry(src, pkl->second, pickle.data(), where);
        unpickler vm(pickle, src, zip, archive, where);
        const pnode* root = vm.run();
        return value_builder(where).build(root);
    });
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// A protocol-2 pickle, written opcode by opcode.
struct pickle_writer {
    std::vector<std::byte> out;
    void op(std::uint8_t c) { out.push_back(static_cast<std::byte>(c)); }
    void raw(std::string_view s) {
        for (char c : s) out.push_back(static_cast<std::byte>(c));
    }
    void le(std::uint64_t v, int n) {
        for (int k = 0; k < n; ++k, v >>= 8) out.push_back(static_cast<std::byte>(v & 0xff));
    }
    void str(std::string_view s) {
        op('X');
        le(s.size(), 4);
        raw(s);
    }
    void integer(std::int64_t v) {
        if (v >= 0 && v < 256) {
            op('K');
            le(static_cast<std::uint64_t>(v), 1);
        } else if (v >= 0 && v < 65536) {
            op('M');
            le(static_cast<std::uint64_t>(v), 2);
        } else if (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max()) {
            op('J');
            le(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
        } else {
            op(0x8a);  // LONG1, 8 bytes two's complement
            le(8, 1);
            le(static_cast<std::uint64_t>(v), 8);
        }
    }
    void global(std::string_view module, std::string_view name) {
        op('c');
        raw(module);
        op('\n');
        raw(name);
        op('\n');
    }
    void int_tuple(const int_list& v) {
        op('(');
        for (std::int64_t x : v) integer(x);
        op('t');
    }
};

struct zip_writer_entry {
    std::string name;
    const std::byte* data = nullptr;
    std::size_t size = 0;
};

/// A zip of stored entries whose data starts at multiples of 64 bytes (the padding is an
/// extra field, as torch's writer makes it), written by calling sink(pointer, n).
template <class Sink>
void write_zip(const std::vector<zip_writer_entry>& entries, const std::string& where, Sink&& sink) {
    constexpr std::uint64_t limit = 0xffffffffu;
    if (entries.size() >= 0xffff) fail(concat(where, ": more than 65534 entries would need Zip64, which graft does not write"));
    std::vector<std::byte> cd;
    auto put = [](std::vector<std::byte>& v, std::uint64_t x, int n) {
        for (int k = 0; k < n; ++k, x >>= 8) v.push_back(static_cast<std::byte>(x & 0xff));
    };
    std::uint64_t offset = 0;
    for (const zip_writer_entry& e : entries) {
        const std::uint32_t crc = crc32(e.data, e.size);
        const std::uint64_t header = 30 + e.name.size();
        std::uint64_t pad = (64 - (offset + header + 4) % 64) % 64 + 4;  // extra field: 4-byte head + padding
        std::vector<std::byte> h;
        put(h, 0x04034b50, 4);
        put(h, 20, 2);    // version needed: 2.0
        put(h, 0, 2);     // flags
        put(h, 0, 2);     // stored
        put(h, 0, 2);     // time
        put(h, 0x21, 2);  // date: 1980-01-01
        put(h, crc, 4);
        put(h, e.size, 4);
        put(h, e.size, 4);
        put(h, e.name.size(), 2);
        put(h, pad, 2);
        for (char c : e.name) h.push_back(static_cast<std::byte>(c));
        put(h, 0x4246, 2);  // "FB": padding
        put(h, pad - 4, 2);
        h.resize(h.size() + static_cast<std::size_t>(pad - 4), std::byte{'Z'});
        if (offset + h.size() + e.size > limit)
            fail(concat(where, ": the archive would exceed 4 GiB, which needs Zip64, which graft does not write"));
        put(cd, 0x02014b50, 4);
        put(cd, 20, 2);  // made by
        put(cd, 20, 2);  // needed
        put(cd, 0, 2);
        put(cd, 0, 2);
        put(cd, 0, 2);
        put(cd, 0x21, 2);
        put(cd, crc, 4);
        put(cd, e.size, 4);
        put(cd, e.size, 4);
        put(cd, e.name.size(), 2);
        put(cd, 0, 2);  // extra
        put(cd, 0, 2);  // comment
        put(cd, 0, 2);  // disk
        put(cd, 0, 2);  // internal attributes
        put(cd, 0, 4);  // external attributes
        put(cd, offset, 4);
        for (char c : e.name) cd.push_back(static_cast<std::byte>(c));
        sink(h.data(), h.size());
        sink(e.data, e.size);
        offset += h.size() + e.size;
    }
    if (offset + cd.size() > limit)
        fail(concat(where, ": the archive would exceed 4 GiB, which needs Zip64, which graft does not write"));
    std::vector<std::byte> end;
    put(end, 0x06054b50, 4);
    put(end, 0, 2);
    put(end, 0, 2);
    put(end, entries.size(), 2);
    put(end, entries.size(), 2);
    put(end, cd.size(), 4);
    put(end, offset, 4);
    put(end, 0, 2);
    sink(cd.data(), cd.size());
    sink(end.data(), end.size());
}

/// What save_torch writes: the pickle, the storages, and the zip's entries over them.
struct torch_prepared {
    std::vector<std::byte> pickle;
    std::vector<Tensor> storages;  // 1-d, contiguous, over each written storage (little-endian copies on big-endian hosts)
    std::vector<std::string> keys;
    std::vector<zip_writer_entry> entries;
};

inline constexpr std::string_view torch_version_record = "3\n";

[[nodiscard]] inline torch_prepared prepare_torch(const named_tensors& tensors, const std::string& where) {
    torch_prepared p;
    {
        std::set<std::string_view> names;
        for (const auto& [name, t] : tensors.items()) {
            if (!t.defined()) fail(concat(where, ": tensor ", show(name), " is undefined"));
            if (!names.insert(name).second) fail(concat(where, ": two tensors are named ", show(name)));
            if (const std::size_t bad = invalid_utf8_at(name); bad != std::string_view::npos)
                fail(concat(where, ": tensor name ", show(name), " is not valid UTF-8 (at byte ", bad, ")"));
        }
    }
    // Tensors that share a graft storage (with one dtype) share one storage in the file.
    std::map<const graft::detail::storage*, std::size_t> by_storage;
    pickle_writer w;
    w.op(0x80);
    w.op(2);
    w.global("collections", "OrderedDict");
    w.op(')');
    w.op('R');
    w.op('(');
    for (const auto& [name, t0] : tensors.items()) {
        Tensor t = t0;
        const graft::detail::storage* s = t.impl().data.get();
        std::size_t k;
        const auto it = by_storage.find(s);
        if (it != by_storage.end() && p.storages[it->second].type() == t.type()) {
            k = it->second;
        } else {
            if (it != by_storage.end()) {  // the same bytes under another dtype: saved as a copy
                t = graft::detail::raw::contiguous(t);
                s = t.impl().data.get();
            }
            k = p.storages.size();
            const auto numel = static_cast<std::int64_t>(s->nbytes() / t.element_size());
            p.storages.push_back(graft::detail::raw::view_of(t, {numel}, {1}, 0));
            p.keys.push_back(std::to_string(k));
            by_storage.emplace(s, k);
        }
        const storage_class& cls = storage_class_of(t.type());
        const std::size_t dot = cls.name.find('.');
        w.str(name);
        w.global("torch._utils", "_rebuild_tensor_v2");
        w.op('(');
        w.op('(');
        w.str("storage");
        w.global(cls.name.substr(0, dot), cls.name.substr(dot + 1));
        w.str(p.keys[k]);
        w.str("cpu");
        w.integer(p.storages[k].numel());
        w.op('t');
        w.op('Q');
        w.integer(t.storage_offset());
        w.int_tuple(t.sizes());
        w.int_tuple(t.strides());
        w.op(0x89);  // requires_grad False
        w.global("collections", "OrderedDict");
        w.op(')');
        w.op('R');
        w.op('t');
        w.op('R');
    }
    w.op('u');
    w.op('.');
    p.pickle = std::move(w.out);
    if constexpr (std::endian::native == std::endian::big) {
        for (Tensor& st : p.storages) {
            st = graft::detail::raw::clone(st);
            swap_bytes(static_cast<std::byte*>(st.raw_data()), static_cast<std::size_t>(st.numel()) * st.element_size(),
                       st.element_size());
        }
    }
    const std::string archive = "archive";
    p.entries.push_back({archive + "/data.pkl", p.pickle.data(), p.pickle.size()});
    for (std::size_t k = 0; k < p.storages.size(); ++k)
        p.entries.push_back({archive + "/data/" + p.keys[k], static_cast<const std::byte*>(p.storages[k].raw_data()),
                             static_cast<std::size_t>(p.storages[k].numel()) * p.storages[k].element_size()});
    p.entries.push_back({archive + "/version", reinterpret_cast<const std::byte*>(torch_version_record.data()),
                         torch_version_record.size()});
    return p;
}

/// Depth-first flattening for torch_value::tensors().
inline void flatten(const torch_value& v, std::string& path, named_tensor_list& out,
                    std::set<std::string, std::less<>>& seen, std::uint64_t& name_bytes) {
    auto add = [&](const torch_value& child, std::string_view key) {
        const std::size_t keep = path.size();
        if (!path.empty()) path += '.';
        path += key;
        flatten(child, path, out, seen, name_bytes);
        path.resize(keep);
    };
    switch (v.type()) {
        case torch_value::kind::tensor: {
            name_bytes += path.size();
            if (name_bytes > (std::uint64_t{1} << 28))
                fail("io::torch_value::tensors: the names total more than 256 MiB (containers shared many times over)");
            if (!seen.insert(path).second)
                fail(concat("io::torch_value::tensors: two tensors flatten to the name ", show(path)));
            out.emplace_back(path, v.to_tensor());
            break;
        }
        case torch_value::kind::tuple:
        case torch_value::kind::list:
            for (std::size_t i = 0; i < v.elements().size(); ++i) add(v.elements()[i], std::to_string(i));
            break;
        case torch_value::kind::dict:
            for (const auto& [key, value] : v.items()) {
                switch (key.type()) {
                    case torch_value::kind::string: add(value, key.to_string()); break;
                    case torch_value::kind::integer: add(value, std::to_string(key.to_int())); break;
                    case torch_value::kind::boolean: add(value, key.to_bool() ? "True" : "False"); break;
                    case torch_value::kind::none: add(value, "None"); break;
                    default:
                        if (value.is_tensor() || value.type() == torch_value::kind::dict ||
                            value.type() == torch_value::kind::list || value.type() == torch_value::kind::tuple)
                            fail(concat("io::torch_value::tensors: a dict key of type ", key.type_name(),
                                        " leads to tensors (names use str, int, bool and None keys)"));
                }
            }
            break;
        default: break;
    }
}

}  // namespace detail

GRAFT_INLINE torch_value::kind torch_value::type() const noexcept { return d_ ? d_->k : kind::none; }

GRAFT_INLINE std::string_view torch_value::type_name() const noexcept {
    switch (type()) {
        case kind::none: return "None";
        case kind::boolean: return "bool";
        case kind::integer: return "int";
        case kind::floating: return "float";
        case kind::string: return "str";
        case kind::tuple: return "tuple";
        case kind::list: return "list";
        case kind::dict: return "dict";
        case kind::tensor: return "Tensor";
    }
    return "?";
}

namespace detail {
[[noreturn]] inline void wrong_kind(const torch_value& v, std::string_view wanted) {
    fail(concat("io::torch_value: a ", v.type_name(), " is not a ", wanted));
}
}  // namespace detail

GRAFT_INLINE bool torch_value::to_bool() const {
    if (type() != kind::boolean) detail::wrong_kind(*this, "bool");
    return d_->b;
}
GRAFT_INLINE std::int64_t torch_value::to_int() const {
    if (type() == kind::boolean) return d_->b ? 1 : 0;
    if (type() != kind::integer) detail::wrong_kind(*this, "int");
    return d_->i;
}
GRAFT_INLINE double torch_value::to_double() const {
    if (type() == kind::integer) return static_cast<double>(d_->i);
    if (type() != kind::floating) detail::wrong_kind(*this, "float");
    return d_->f;
}
GRAFT_INLINE const std::string& torch_value::to_string() const {
    if (type() != kind::string) detail::wrong_kind(*this, "str");
    return d_->s;
}
GRAFT_INLINE const Tensor& torch_value::to_tensor() const {
    if (type() != kind::tensor) detail::wrong_kind(*this, "Tensor");
    return d_->t;
}
GRAFT_INLINE const std::vector<torch_value>& torch_value::elements() const {
    if (type() != kind::tuple && type() != kind::list) detail::wrong_kind(*this, "tuple or list");
    return d_->elements;
}
GRAFT_INLINE const std::vector<std::pair<torch_value, torch_value>>& torch_value::items() const {
    if (type() != kind::dict) detail::wrong_kind(*this, "dict");
    return d_->items;
}
GRAFT_INLINE bool torch_value::contains(std::string_view key) const {
    if (type() != kind::dict) detail::wrong_kind(*this, "dict");
    return d_->str_keys.find(key) != d_->str_keys.end();
}
GRAFT_INLINE const torch_value& torch_value::at(std::string_view key) const {
    if (type() != kind::dict) detail::wrong_kind(*this, "dict");
    const auto it = d_->str_keys.find(key);
    if (it == d_->str_keys.end()) {
        std::string keys;
        for (const auto& [k, i] : d_->str_keys) {
            if (keys.size() > 200) {
                keys += ", ...";
                break;
            }
            keys += keys.empty() ? "" : ", ";
            keys += detail::show(k);
        }
        graft::detail::fail(graft::detail::concat("io::torch_value::at: the dict has no key ", detail::show(key),
                                                  " (its str keys: ", keys.empty() ? "none" : keys, ")"));
    }
    return d_->items[it->second].second;
}

GRAFT_INLINE named_tensor_list torch_value::tensors() const {
    named_tensor_list out;
    std::string path;
    std::set<std::string, std::less<>> seen;
    std::uint64_t name_bytes = 0;
    detail::flatten(*this, path, out, seen, name_bytes);
    return out;
}

GRAFT_INLINE torch_value load_torch_object(std::span<const std::byte> bytes) {
    detail::zip_source src;
    src.bytes = bytes;
    src.size = bytes.size();
    return detail::load_torch_archive(src, "io::load_torch");
}

GRAFT_INLINE torch_value load_torch_object(const std::filesystem::path& path) {
    const std::string where = graft::detail::concat("io::load_torch(", detail::path_text(path), ")");
    return detail::guarded(where, [&] {
        std::error_code ec;
        const auto status = std::filesystem::status(path, ec);
        if (ec) graft::detail::fail(graft::detail::concat(where, ": ", ec.message()));
        if (!std::filesystem::is_regular_file(status)) graft::detail::fail(graft::detail::concat(where, ": not a regular file"));
        detail::zip_source src;
        src.file = std::make_shared<detail::file_handle>();
        src.file->f = std::fopen(path.c_str(), "rb");
        if (src.file->f == nullptr)
            graft::detail::fail(graft::detail::concat(where, ": cannot open: ", std::strerror(errno)));
        std::setvbuf(src.file->f, nullptr, _IONBF, 0);  // see safe_open: reads see the file as it is now
        if (std::fseek(src.file->f, 0, SEEK_END) != 0)
            graft::detail::fail(graft::detail::concat(where, ": cannot seek: ", std::strerror(errno)));
        const long end = std::ftell(src.file->f);
        if (end < 0) graft::detail::fail(graft::detail::concat(where, ": cannot tell the size: ", std::strerror(errno)));
        src.size = static_cast<std::uint64_t>(end);
        src.file->size = src.size;
        return detail::load_torch_archive(src, where);
    });
}

GRAFT_INLINE named_tensor_list load_torch(std::span<const std::byte> bytes) { return load_torch_object(bytes).tensors(); }

GRAFT_INLINE named_tensor_list load_torch(const std::filesystem::path& path) { return load_torch_object(path).tensors(); }

GRAFT_INLINE std::vector<std::byte> save_torch(const named_tensors& tensors) {
    const std::string where = "io::save_torch";
    return detail::guarded(where, [&] {
        const detail::torch_prepared p = detail::prepare_torch(tensors, where);
        std::vector<std::byte> out;
        detail::write_zip(p.entries, where, [&](const std::byte* d, std::size_t n) {
            if (n != 0) out.insert(out.end(), d, d + n);
        });
        return out;
    });
}

GRAFT_INLINE void save_torch(const named_tensors& tensors, const std::filesystem::path& path) {
    const std::string where = graft::detail::concat("io::save_torch(", detail::path_text(path), ")");
    detail::guarded(where, [&] {
        const detail::torch_prepared p = detail::prepare_torch(tensors, where);
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) graft::detail::fail(graft::detail::concat(where, ": cannot open for writing: ", std::strerror(errno)));
        bool ok = true;
        int err = 0;
        try {
            detail::write_zip(p.entries, where, [&](const std::byte* d, std::size_t n) {
                if (ok && n != 0 && std::fwrite(d, 1, n, f) != n) {
                    ok = false;
                    err = errno;
                }
            });
        } catch (...) {
            std::fclose(f);
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
            throw;
        }
        if (std::fclose(f) != 0 && ok) {
            ok = false;
            err = errno;
        }
        if (!ok) {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
            graft::detail::fail(graft::detail::concat(where, ": write failed: ", std::strerror(err)));
        }
    });
}

}  // namespace graft::io
