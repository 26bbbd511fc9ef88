-- LeakyBucket (shaping): the token bucket's state read as a queue of work
-- draining at the rate. An admitted request waits for the work ahead of it.
ALG[1] = {
  look = TB.look,
  avail = TB.avail,
  allows = TB.allows,
  commit = TB.commit,
  giveback = TB.giveback,
  refund = TB.refund,
  decide = function(v, cost, ok)
    local out = TB.decide(v, cost, ok)
    if ok then
      out[4] = after(v, v.nq + cdiv(v.d, v.sp.r))
    end
    return out
  end,
}
