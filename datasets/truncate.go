package datasets

// LongestFirst is how many tokens of texts of n1 and n2 tokens to keep in
// an encoding of maxLen tokens, specials of them special tokens, as
// tokenizers' LongestFirst: each text is first cut to maxLen alone; then,
// in the room left by the specials, the shorter keeps all it has up to
// half the room, the longer the rest (the odd token goes to the longer;
// to the second on a tie). It is transformers' truncation=True
// (longest_first), for one text (n2 0) or a pair; finetune's
// TestLongestFirst holds the cases of tools/hftokenizers/truncation.js,
// which measures the rule against the npm package tokenizers 0.23.2
// (equal on all 3888 pairs of its grid).
func LongestFirst(n1, n2, maxLen, specials int) (k1, k2 int) {
	n1, n2 = min(n1, max(maxLen, 0)), min(n2, max(maxLen, 0))
	room := max(maxLen-specials, 0)
	if n1+n2 <= room {
		return n1, n2
	}
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	t1, t2 := n1, max(n1, room-n1) // n1 > room: t2 = n1, and the sum is over
	if t1+t2 > room {
		t1 = room / 2
		t2 = t1 + room%2
	}
	if swap {
		t1, t2 = t2, t1
		n1, n2 = n2, n1
	}
	return min(n1, t1), min(n2, t2)
}
