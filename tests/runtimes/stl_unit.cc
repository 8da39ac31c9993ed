// An STL-heavy translation unit for tests/defaults/gxx.sh: g++ -O2 -c of it keeps
// cc1plus busy with templates (maps, vectors of strings, sorting, std::function).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
template <typename K, typename V> struct Table {
	std::map<K, std::vector<V>> rows;
	std::unordered_map<K, std::set<V>> index;
	void add(const K &k, const V &v)
	{
		rows[k].push_back(v);
		index[k].insert(v);
	}
	std::vector<V> sorted(const K &k) const
	{
		auto it = rows.find(k);
		if (it == rows.end())
			return {};
		std::vector<V> out = it->second;
		std::sort(out.begin(), out.end());
		return out;
	}
};
} // namespace

#define TABLE(N, K, V)                                                     \
	std::vector<V> use##N(const std::vector<std::pair<K, V>> &in, K key) \
	{                                                                  \
		Table<K, V> t;                                             \
		for (auto &p : in)                                         \
			t.add(p.first, p.second);                          \
		std::function<bool(const V &)> keep = [](const V &) { return true; }; \
		auto out = t.sorted(key);                                  \
		out.erase(std::remove_if(out.begin(), out.end(),           \
					 [&](const V &v) { return !keep(v); }), \
			  out.end());                                      \
		return out;                                                \
	}

TABLE(1, int, std::string)
TABLE(2, std::string, int)
