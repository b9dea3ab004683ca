// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A value shared by its copies until one of them changes it (copy on write), for
// the parts of the sideband made of many small blocks (names, processes and their
// mappings, which thread belongs to which process): a snapshot of a builder
// (LiveSideband publishes one every tick) shares them with the builder instead of
// copying every node, and whoever drops the last copy frees them (issue 28).
//
// Thread-safety as a shared_ptr<const T>: copies may be read and dropped on any
// thread; the one copy that changes the value (mutable_()) is changed on one
// thread only, and the value it changes is its own (cloned first while another
// copy still holds it).
#include <atomic>
#include <memory>

namespace auxscope {

template <typename T>
class CopyOnWrite {
public:
    const T& operator*() const { return p_ ? *p_ : empty(); }
    const T* operator->() const { return &**this; }
    // The value to change: cloned first when another copy shares it.
    T& mutable_() {
        if (!p_) {
            p_ = std::make_shared<T>();
        } else if (p_.use_count() > 1) {
            p_ = std::make_shared<T>(*p_);
        } else {
            // The other copies' reads happen before this change: they dropped
            // their references (an acq_rel decrement) before the count read 1.
            std::atomic_thread_fence(std::memory_order_acquire);
        }
        return *p_;
    }
    // The shared value itself (null while none was made), for a holder that wants
    // to be the one that frees it.
    std::shared_ptr<const T> shared() const { return p_; }

private:
    static const T& empty() {
        static const T e{};
        return e;
    }
    std::shared_ptr<T> p_;
};

// map[key] = value, cloning the map only when that changes it.
template <typename Map, typename Key, typename Value>
void assignIfChanged(CopyOnWrite<Map>& map, const Key& key, const Value& value) {
    auto it = map->find(key);
    if (it == map->end() || !(it->second == value)) map.mutable_()[key] = value;
}

}  // namespace auxscope
